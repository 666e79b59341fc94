"""The known shapes of secrets, as tables for ``redact``: token formats that are secrets wherever they appear,
webhook URLs whose path is the secret, and the commands whose short options take a password.

Portable (see ``__init__``): stdlib only, Python 3.8+, loaded in the target interpreter too.
"""

# Webhook URLs whose path is the secret: the path after these is masked, up to a space, a quote or a query.
_HOOKS = (
    r"hooks\.slack\.com/(?:services|workflows|triggers)/",  # Slack incoming webhooks and workflow triggers
    r"discord(?:app)?\.com/api/webhooks/",  # Discord
    r"webhook\.office\.com/webhookb2/",  # Microsoft Teams
    r"hooks\.zapier\.com/hooks/catch/",  # Zapier
)

# Token formats that are secrets wherever they appear, whatever surrounds them.
_TOKENS = (
    r"hf_[A-Za-z0-9]{20,}",  # Hugging Face
    r"gh[pousr]_[A-Za-z0-9]{20,}",  # GitHub: classic, OAuth, user-to-server, server-to-server, refresh
    r"github_pat_[A-Za-z0-9_]{20,}",  # GitHub fine-grained
    r"gl(?:pat|dt|rt|ptt|oas|cbt|ft|imt|agent)-[A-Za-z0-9_\-]{20,}",  # GitLab
    r"sk-[A-Za-z0-9_\-]{20,}",  # OpenAI (sk-, sk-proj-), Anthropic (sk-ant-), DeepSeek...
    r"(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{10,}",  # Stripe secret and restricted keys
    r"whsec_[A-Za-z0-9]{20,}",  # Stripe webhook secret
    r"xox[abposer]-[A-Za-z0-9\-]{10,}|xapp-[A-Za-z0-9\-]{10,}",  # Slack
    r"(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|AROA|APKA)[0-9A-Z]{16}",  # AWS key ids
    r"AIza[0-9A-Za-z_\-]{30,}",  # Google API key
    r"ya29\.[0-9A-Za-z_\-]{20,}",  # Google OAuth access token
    r"npm_[A-Za-z0-9]{30,}",  # npm
    r"pypi-[A-Za-z0-9_\-]{30,}",  # PyPI
    r"wandb_v1_[A-Za-z0-9_]{20,}",  # Weights & Biases (newer keys)
    r"hv[sbr]\.[A-Za-z0-9_\-]{24,}",  # HashiCorp Vault service, batch and recovery tokens
    r"dckr_pat_[A-Za-z0-9_\-]{20,}",  # Docker Hub personal access token
    r"api_org_[A-Za-z0-9]{20,}",  # Hugging Face organisation API token
    r"GOCSPX-[A-Za-z0-9_\-]{20,}",  # Google OAuth client secret
    r"gsk_[A-Za-z0-9]{20,}",  # Groq
    r"r8_[A-Za-z0-9]{20,}",  # Replicate
    r"do[opr]_v1_[a-f0-9]{40,}",  # DigitalOcean personal, OAuth and refresh tokens
    r"ATATT[A-Za-z0-9_\-=]{20,}",  # Atlassian API token
    r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{20,}",  # Shopify access tokens and shared secret
    r"SG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}",  # SendGrid
    r"dapi[a-f0-9]{32}(?:-[0-9])?",  # Databricks
    r"nvapi-[A-Za-z0-9_\-]{20,}",  # NVIDIA API catalog
    r"xai-[A-Za-z0-9]{20,}",  # xAI
    r"pplx-[A-Za-z0-9]{20,}",  # Perplexity
    r"glsa_[A-Za-z0-9]{20,}_[A-Fa-f0-9]{8}",  # Grafana service account
    r"lin_api_[A-Za-z0-9]{20,}",  # Linear
    r"sq0(?:atp|csp)-[A-Za-z0-9_\-]{20,}",  # Square
    r"pul-[a-f0-9]{40}",  # Pulumi
    r"ntn_[A-Za-z0-9]{30,}",  # Notion
    r"LTAI[A-Za-z0-9]{16,}",  # Alibaba Cloud access key id
    # JWT, also without its signature (a name split at dots, a line cut); header and payload are bounded so that
    # a failed attempt costs a bounded scan.
    r"eyJ[A-Za-z0-9_\-]{8,256}\.eyJ[A-Za-z0-9_\-]{8,8192}(?:\.[A-Za-z0-9_\-]*)?",
)


# Commands whose short options take a password: option letters whose value is the next word, letters whose value
# is attached (``mysql -pX``: ``mysql -p db`` asks for it, db is a database), and a subcommand they need (``docker
# login -p X``; ``docker run -p 8080:80`` publishes a port).
_PASSWORD_OPTIONS = {
    "docker": ("p", "", "login"),
    "podman": ("p", "", "login"),
    "nerdctl": ("p", "", "login"),
    "buildah": ("p", "", "login"),
    "skopeo": ("p", "", "login"),
    "helm": ("p", "", "login"),
    "oras": ("p", "", "login"),
    "crane": ("p", "", "login"),
    "sshpass": ("p", "", ""),
    "mysql": ("", "p", ""),
    "mysqldump": ("", "p", ""),
    "mysqladmin": ("", "p", ""),
    "mysqlimport": ("", "p", ""),
    "mariadb": ("", "p", ""),
    "mariadb-dump": ("", "p", ""),
    "mongo": ("p", "p", ""),
    "mongosh": ("p", "p", ""),
    "mongodump": ("p", "p", ""),
    "mongorestore": ("p", "p", ""),
    "mongoexport": ("p", "p", ""),
    "mongoimport": ("p", "p", ""),
    "redis-cli": ("a", "a", ""),
    "sqlcmd": ("P", "P", ""),
    "bcp": ("P", "P", ""),
    "zip": ("P", "P", ""),
    "7z": ("", "p", ""),
    "7za": ("", "p", ""),
    "unrar": ("", "p", ""),
    "rar": ("", "p", ""),
    "ldapsearch": ("w", "w", ""),
    "ldapadd": ("w", "w", ""),
    "ldapmodify": ("w", "w", ""),
    "ldapdelete": ("w", "w", ""),
    "mosquitto_pub": ("P", "P", ""),
    "mosquitto_sub": ("P", "P", ""),
}
