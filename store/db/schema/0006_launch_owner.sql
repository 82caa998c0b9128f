-- Which supervisor instance runs a launch, so that a second supervisor on the same project (a
-- `serve` process and a CLI launch, say) reaps only launches whose owner is gone.
ALTER TABLE role_launches ADD COLUMN owner TEXT;
