-- PostgreSQL twin of schema/0006_launch_owner.sql.
ALTER TABLE role_launches ADD COLUMN owner TEXT COLLATE "C";
