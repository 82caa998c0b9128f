"""The concept table: general classes of risky construct, across languages, as data.

Each entry says how decisions name a concept (``cue``, matched against one decision sentence,
case-insensitively) and what added code that goes against such a decision looks like. Nothing here
is specific to one project or one scenario; extend the table rather than the judge.
"""

from __future__ import annotations

from roles.providers.judge.concepts import Concept, cue, pattern
from roles.providers.judge.lexicon_code import CODE_CONCEPTS
from roles.providers.judge.lexicon_delivery import DELIVERY_CONCEPTS
from roles.providers.judge.lexicon_infra import INFRA_CONCEPTS

__all__ = ["CONCEPTS"]


_LOG_CALL = (
    r"\b(log|logger|logging|_log|slog|zap|zerolog|logrus|tracing|structlog|winston|pino|console|sugar)"
    r"\s*(\.|::)\s*(debug|info|warn|warning|error|exception|critical|fatal|trace|log|print|printf|println|"
    r"infof|errorf|warnf|debugf|fatalf|infow|errorw|msg|with|withfield|withfields)\b"
    r"|\b(print|println!|eprintln!|printf|console\.log|fmt\.(print|printf|println|fprintf))\s*\("
    r"|\b(info|warn|error|debug|trace)!\s*\("
)
_PII = (
    r"(e_?mail|phone|msisdn|ssn|social_?security|birth|\bdob\b|passport|card_?number|\bpan\b|iban|"
    r"first_?name|last_?name|full_?name|surname|home_?address|street|postcode|zip_?code|remote_?addr|"
    r"client_?ip|ip_?addr|x-forwarded-for|national_?id|tax_?id|password|\.ip\b|\.address\b|"
    r"\b(user|customer|patient|person|member|account|profile|contact|req|request)s?\.(name|address|dob|birthday)\b|"
    # a whole person record handed to the log call
    r"[,(]\s*(user|customer|patient|person|member|contact|profile|account)\s*[,)])"
)
_CREDENTIAL_NAMES = (
    r"(password|passwd|pwd|secret|api_?key|apikey|token|access_?key|private_?key|client_?secret|auth)"
)
_MASK = r"(mask|redact|scrub|hash|anonymi|pseudonymi|obfuscat|sanitiz|sanitis|truncat|\*\*\*|\[redacted)"
_MONEY = (
    r"\b\w*(price|amount|cost|balance|total|fee|salary|money|subtotal|tax|payment|charge|refund|payout)\w*\b"
)
_FLOAT = (
    r"(\bfloat(32|64)?\b|\bf32\b|\bf64\b|\bdouble\b|\breal\b|double precision|parseFloat|toFixed|\bFloat\b|"
    r"\b(Float|Double)(Field|Type|Column)\b|\bsa\.Float\b)"
)

_SECURITY: tuple[Concept, ...] = (
    Concept(
        "tls_verification",
        cue(
            r"\b(tls|ssl|https|certificates?|certs?)\b.*\b(verif|validat|check|trust)"
            r"|\bverif\w*\b.*\b(tls|ssl|cert)"
            r"|insecure|self-signed"
        ),
        (
            pattern(r"\bverify\s*=\s*False\b", "python", "turns off certificate verification", strength=0.9),
            pattern(
                r"\b(check_hostname\s*=\s*False|CERT_NONE|_create_unverified_context)",
                "python",
                "turns off certificate verification",
                strength=0.9,
            ),
            pattern(r"InsecureSkipVerify\s*:\s*true", "go", "skips certificate verification", strength=0.9),
            pattern(
                r"rejectUnauthorized\s*:\s*false|NODE_TLS_REJECT_UNAUTHORIZED",
                "typescript yaml docker config",
                "turns off certificate verification",
                strength=0.9,
            ),
            pattern(
                r"danger_accept_invalid_(certs|hostnames)\s*\(\s*true",
                "rust",
                "accepts invalid certificates",
                strength=0.9,
            ),
            pattern(
                r"\bcurl\b.*\s(-k|--insecure)\b|\bwget\b.*--no-check-certificate|sslverify\s*=\s*(0|false)",
                "docker shell ci yaml",
                "downloads without verifying certificates",
                strength=0.85,
            ),
            pattern(
                r"\b(insecure_skip_tls_verify|skip_tls_verify|tls_skip_verify)\s*[:=]\s*true",
                "any",
                "skips certificate verification",
                strength=0.85,
            ),
        ),
    ),
    Concept(
        "sensitive_logging",
        cue(
            r"\b(personal|pii|personally|e-?mails?|phone|addresses|ssn|card numbers?|tokens?|customer data"
            r"|user data|ip address(es)?|gdpr"
            r"|passwords?|secrets?"
            r"|credentials?)\b.*\b(logs?|logged|logging|log lines?)\b"
            r"|\b(logs?|logging|log lines?)\b.*\b(personal|pii|e-?mails?|phone|ip address|addresses|tokens?|"
            r"passwords?|secrets?|credentials?)\b"
        ),
        (
            pattern(
                _LOG_CALL,
                "code",
                "logs personal or secret data",
                also=_PII + "|" + _CREDENTIAL_NAMES,
                unless=_MASK,
                also_in_code=True,
            ),
        ),
    ),
    Concept(
        "local_time",
        cue(
            r"\butc\b|time ?zones?|tz-?aware|timezone-aware|aware (datetimes?|timestamps?)"
            r"|\bnaive\b|local time"
        ),
        (
            pattern(
                r"\bdatetime\.now\s*\(\s*\)|\bdatetime\.now\b(?!\s*\()|\bdatetime\.today\s*\(|"
                r"\btime\.localtime\s*\(|\bdate\.today\s*\(|\bdatetime\.fromtimestamp\s*\(\s*[^,()]+\)|"
                r"\barrow\.now\s*\(\s*\)",
                "python",
                "takes a naive local time",
                strength=0.85,
            ),
            pattern(
                r"\bdatetime\.utcnow\s*\(", "python", "takes a naive (zone-less) datetime", strength=0.65
            ),
            pattern(
                r"\.toLocale(String|DateString|TimeString)\s*\(|\.get(Hours|Minutes|Day|Date|Month"
                r"|FullYear)\s*\(|\bmoment\s*\(\s*\)(?!\s*\.\s*utc)",
                "typescript",
                "uses the browser's local time zone",
                strength=0.8,
            ),
            pattern(
                r"\btime\.Now\s*\(\s*\)(?!\s*\.\s*(UTC|Sub|Add|Unix))",
                "go",
                "takes a local time.Time",
                strength=0.8,
                also=r"(at|time|stamp|date|created|updated|expires?|ts|when)\w*\s*[:=]|\.Format\(|\bExec\w*\(|"
                r"\bInsert|\bValues\b|json\.",
                unless=r"time\.Since|time\.Until|deadline|start\s*:?=",
            ),
            pattern(
                r"\btime\.Local\b|\.Local\(\)|\.In\(\s*time\.Local",
                "go",
                "converts to local time",
                strength=0.85,
            ),
            pattern(
                r"\bLocal::now\b|DateTime<Local>|chrono::Local\b|\bLocal\b\s*::|\bNaiveDateTime\b",
                "rust",
                "uses the local time zone",
                strength=0.85,
            ),
            pattern(
                r"\b(TIMESTAMP|DATETIME)\b(?!\s*WITH\s+TIME\s+ZONE)",
                "sql",
                "declares a timestamp column without a time zone",
                strength=0.8,
                unless=r"CURRENT_TIMESTAMP\s*$|TIMESTAMPTZ",
            ),
        ),
    ),
    Concept(
        "money_float",
        cue(
            r"\b(money|monetary|prices?|amounts?|balances?|currency|fees?|payments?"
            r"|totals?)\b.*\b(integers?|int\d*|"
            r"i64|u64|bigint|cents|minor units|floats?|floating|f64|f32|doubles?|decimals?"
            r"|precision|represent\w*|"
            r"stored as)\b|\bminor units\b|\b(float\w*|doubles?|f64)\b.*\b(money|prices?|amounts?|currency)\b"
        ),
        (
            pattern(
                _MONEY,
                "code sql",
                "keeps a money value in binary floating point",
                also=_FLOAT,
                unless=r"\b(rate|ratio|percent|pct|discount_rate)\b\s*:",
            ),
        ),
        anti_cue=cue(r"\b(float|double|f64)s? (is|are) (fine|allowed|ok)"),
    ),
    Concept(
        "money_decimal",
        cue(r"\b(integers?|int64|i64|bigint|cents|minor units)\b"),
        (
            pattern(
                _MONEY,
                "code sql",
                "keeps a money value as a decimal, not integer minor units",
                also=r"\b(numeric|decimal|bigdecimal|Decimal)\b",
                strength=0.75,
            ),
        ),
    ),
    Concept(
        "secrets_in_code",
        cue(
            r"\b(secrets?|credentials?|passwords?|api keys?|tokens?|private keys?)\b.*\b(code"
            r"|source|repo\w*|commit\w*|"
            r"hard-?cod|plain ?text|config|files?|images?|literals?|version control|git)\b|hard-?coded"
        ),
        (
            pattern(
                _CREDENTIAL_NAMES + r"\w*[\"']?\s*[:=]\s*[\"'][^\"'\s$<{]{8,}[\"']",
                "any",
                "puts a secret literal in the source",
                in_strings=True,
                strength=0.85,
                unless=r"environ|getenv|process\.env|secrets\.|example|dummy|changeme|placeholder|xxx|test",
            ),
            pattern(
                r"\bAKIA[0-9A-Z]{16}\b|-----BEGIN [A-Z ]*PRIVATE KEY|\bghp_[A-Za-z0-9]{30,}"
                r"|\bsk-[A-Za-z0-9]{20,}|\b[rs]k_live_[A-Za-z0-9]{10,}"
                r"|\bxox[bpas]-[A-Za-z0-9-]{10,}",
                "any",
                "commits a credential",
                in_strings=True,
                strength=0.95,
                flags=0,
            ),
            pattern(
                r"^\s*(export\s+)?\w*(KEY|SECRET|TOKEN|PASSWORD|PASSWD)\w*\s*=\s*[^\s$\"'{<]{8,}\s*$",
                "config other shell",
                "puts a secret value in a committed file",
                strength=0.8,
                unless=r"example|dummy|changeme|placeholder|xxx|<|\bfalse\b|\btrue\b",
                flags=0,
            ),
            pattern(
                r"^\s*(ENV|ARG)\s+\w*(PASSWORD|SECRET|TOKEN|API_KEY)\w*[= ]\S+",
                "docker",
                "bakes a secret into the image",
                strength=0.85,
            ),
        ),
    ),
    Concept(
        "plaintext_password",
        cue(
            r"\bplain ?-?text\b.*\bpasswords?\b|"
            r"\bpasswords?\b.*\b(plain ?-?text|hash\w*|argon2|bcrypt|scrypt)\b"
        ),
        (
            pattern(
                r"\w*pass(word|wd)\w*\s*(==|!=|===)|(==|!=|===)\s*[\w.]*pass(word|wd)\b",
                "code",
                "compares a password in plain text",
                strength=0.8,
                unless=r"hash|digest|None|null|nil|\"\"|''",
            ),
            pattern(
                r"\.pass(word|wd)\s*=\s*(?!.*hash)[\w.]*pass(word|wd)\b",
                "code",
                "stores a password without hashing it",
                strength=0.75,
            ),
        ),
    ),
    Concept(
        "secrets_printed",
        cue(
            r"\b(print|echo|output|expose|log|display)\w*\b.*\bsecrets?\b|\bsecrets?\b.*\b(printed"
            r"|echoed|logged|"
            r"exposed|shown)\b"
        ),
        (
            pattern(
                r"\b(echo|printf|print|cat|Write-Host|Write-Output)\b.*\$\{\{\s*secrets\.",
                "ci yaml shell",
                "prints a secret to the job log",
                strength=0.9,
                unless=r"::add-mask::",
            ),
            pattern(
                r"\b(echo|printf)\b.*\$\{?\w*(TOKEN|SECRET|PASSWORD|API_KEY)\w*",
                "ci yaml shell docker",
                "prints a secret to the log",
                strength=0.75,
                unless=r"::add-mask::",
                flags=0,
            ),
        ),
    ),
    Concept(
        "string_sql",
        cue(
            r"\b(raw sql|sql strings?|string-built|query builder|orm\b|parameteri[sz]ed|prepared statements?|"
            r"sql injection|bind (parameters|variables)|placeholders)|(f-strings?|concatenat\w*"
            r"|interpolat\w*|"
            r"format\w*)\b.*\b(sql|quer)|\b(sql|quer\w*)\b.*\b(f-strings?|concatenat|interpolat|format)"
        ),
        (
            pattern(
                r"\bf[\"'].*\b(SELECT|INSERT|UPDATE|DELETE|WHERE)\b.*\{",
                "python",
                "builds SQL with an f-string",
                strength=0.9,
            ),
            pattern(
                r"[\"'`].*\b(SELECT\b.*\bFROM|INSERT\s+INTO|UPDATE\b.*\bSET|DELETE\s+FROM|WHERE)\b.*[\"'`]\s*"
                r"(\+|%\s*[(\w]|\.format\()",
                "code",
                "builds SQL by string concatenation",
                strength=0.9,
            ),
            pattern(
                r"(fmt\.Sprintf|format!|String\.format)\s*\(\s*\"[^\"]*\b(SELECT|INSERT|UPDATE"
                r"|DELETE|WHERE)\b",
                "go rust",
                "formats values into SQL",
                strength=0.9,
            ),
            pattern(
                r"`[^`]*\b(SELECT|INSERT|UPDATE|DELETE|WHERE)\b[^`]*\$\{",
                "typescript",
                "interpolates values into SQL",
                strength=0.9,
            ),
        ),
    ),
    Concept(
        "raw_sql",
        cue(
            r"\b(raw sql|query builder|through the orm|orm only|only the orm|no sql strings?"
            r"|handwritten sql)\b"
        ),
        (
            pattern(
                r"\.(execute|executemany|raw|query|exec|QueryRow|Query"
                r"|Exec)\s*\(\s*[fr]?[\"'`]\s*(SELECT|INSERT|"
                r"UPDATE|DELETE|WITH)\b",
                "code",
                "runs a raw SQL string",
                strength=0.8,
            ),
            pattern(
                r"\b(text|sql\.raw|knex\.raw|sequelize\.query|db\.raw)\s*\(\s*[\"'`]",
                "code",
                "runs a raw SQL string",
                strength=0.75,
            ),
        ),
        anti_cue=cue(r"parameteri[sz]ed (raw )?sql is (fine|allowed)"),
    ),
)

CONCEPTS: tuple[Concept, ...] = _SECURITY + INFRA_CONCEPTS + CODE_CONCEPTS + DELIVERY_CONCEPTS
"""Every concept the judge knows."""
