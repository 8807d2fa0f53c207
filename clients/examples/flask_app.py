"""A Flask app whose one route Flask-Limiter limits to 3 a minute, decided by the module
(GCRA): the app docs/clients.md installs, run by scripts/install_check.sh."""

import os

from flask import Flask
from flask_limiter import Limiter
from flask_limiter.util import get_remote_address

import redis_cell.limits  # noqa: F401  (registers cell+redis:// and the "gcra" strategy)

app = Flask(__name__)
limiter = Limiter(
    get_remote_address,
    app=app,
    storage_uri=os.environ.get("REDIS_URL", "cell+redis://localhost:6379"),
    strategy="gcra",
    headers_enabled=True,
)


@app.route("/")
@limiter.limit("3/minute")
def index():
    return "ok"
