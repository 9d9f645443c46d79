#!/usr/bin/env bash
# Install (or upgrade) chorus as systemd services from this checkout, on Debian 12
# or any Debian/Ubuntu with systemd:
#
#   sudo ./deploy/systemd/install.sh
#   sudo env CHORUS_EXTRAS="holographic mem0" ./deploy/systemd/install.sh   # optional providers
#
# It installs python3 and python3-venv with apt when they are missing, builds the
# locked dependencies and chorus into the virtualenv /opt/chorus/.venv (owned by
# root: the services can run it, not change it), creates the system user `chorus`
# and its home /var/lib/chorus (0700), an /etc/chorus/env for the secrets (0600,
# never overwritten) and installs the units into /etc/systemd/system. Running it
# again gives the same result: that is also how an upgrade is installed (stop the
# services first). The services start the virtualenv's `chorus` directly: nothing
# is downloaded or written outside /var/lib/chorus when they start.
#
# Behind a TLS-inspecting proxy, pass its CA bundle: sudo env PIP_CERT=... SSL_CERT_FILE=...
set -euo pipefail
umask 0022 # the virtualenv and the units must be readable by the services

SRC="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
PREFIX=/opt/chorus
VENV="$PREFIX/.venv"
SERVICE_USER=chorus
STATE=/var/lib/chorus
ETC=/etc/chorus
UNITS=/etc/systemd/system

say() { echo "install.sh: $*" >&2; }

case "${1:-}" in
  -h | --help)
    sed -n '2,17p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
    exit 0
    ;;
  "") ;;
  *)
    say "unknown argument '$1' (see --help)"
    exit 2
    ;;
esac
if [ "$(id -u)" -ne 0 ]; then
  say "run it as root: sudo $0"
  exit 1
fi
if [ ! -f "$SRC/uv.lock" ] || [ ! -f "$SRC/pyproject.toml" ]; then
  say "$SRC is not a chorus checkout (no uv.lock)"
  exit 1
fi

# 1. python3 (>= 3.11) with venv and ensurepip
if ! python3 -c 'import ensurepip, venv' >/dev/null 2>&1; then
  say "installing python3 and python3-venv with apt"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    python3 python3-venv ca-certificates >/dev/null
fi
if ! python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
  say "chorus needs Python 3.11 or newer; python3 is $(python3 --version 2>&1)"
  exit 1
fi

# 2. the system user and its home
if ! id -u "$SERVICE_USER" >/dev/null 2>&1; then
  say "creating the system user $SERVICE_USER"
  useradd --system --user-group --home-dir "$STATE" --no-create-home \
    --shell /usr/sbin/nologin "$SERVICE_USER"
fi
install -d -o "$SERVICE_USER" -g "$SERVICE_USER" -m 0700 "$STATE"

# 3. the virtualenv, exactly as uv.lock says, built with a uv used only for this
tools="$(mktemp -d)"
trap 'rm -rf "$tools"' EXIT
say "building $VENV from $SRC (the locked dependencies)"
python3 -m venv "$tools/uv"
"$tools/uv/bin/pip" install --quiet --disable-pip-version-check --no-cache-dir "uv>=0.5"
extras=()
for extra in ${CHORUS_EXTRAS:-}; do
  extras+=(--extra "$extra")
done
install -d -m 0755 "$PREFIX"
(
  cd "$SRC"
  # the version comes from git (hatch-vcs): let git read a checkout root does not own
  export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=safe.directory GIT_CONFIG_VALUE_0="$SRC"
  UV_CACHE_DIR="$tools/cache" UV_PYTHON="$(command -v python3)" UV_PYTHON_DOWNLOADS=never \
    UV_PROJECT_ENVIRONMENT="$VENV" UV_COMPILE_BYTECODE=1 UV_LINK_MODE=copy \
    "$tools/uv/bin/uv" sync --frozen --no-dev --no-editable --quiet "${extras[@]}"
)
chown -R root:root "$VENV"
chmod -R go-w "$VENV"
version="$(cd / && runuser -u "$SERVICE_USER" -- "$VENV/bin/chorus" --version)"
say "$version runs as $SERVICE_USER"

# 4. the secrets file, kept as it is once it exists
install -d -m 0755 "$ETC"
if [ ! -e "$ETC/env" ]; then
  install -m 0600 /dev/null "$ETC/env"
  cat >"$ETC/env" <<'EOF'
# Secrets and settings for the chorus services, KEY=value per line (systemd's
# EnvironmentFile). Keep this file mode 0600, owned by root.
# OPENAI_API_KEY=
# TELEGRAM_BOT_TOKEN=
# CHORUS_REDIS__URL=redis://127.0.0.1:6379/0
EOF
  say "wrote $ETC/env: put the secrets there"
fi
chown root:root "$ETC/env"
chmod 0600 "$ETC/env"

# 5. the units
for unit in "$SRC"/deploy/systemd/*.service "$SRC"/deploy/systemd/*.timer; do
  install -m 0644 "$unit" "$UNITS/$(basename "$unit")"
done
if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
  systemctl daemon-reload
fi

cat >&2 <<EOF
install.sh: done. Next:
  1. the secrets in $ETC/env (and $STATE/config.yaml if you use one)
  2. systemctl enable --now chorus-gateway
     with Redis also: systemctl enable --now chorus-worker@1
     daily backups:   systemctl enable --now chorus-backup.timer
  3. journalctl -u chorus-gateway -f; curl -s http://127.0.0.1:8080/healthz
EOF
