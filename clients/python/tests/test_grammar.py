"""The client is held to the module's grammar: every option of every command it offers
(clients/grammar.json, printed from src/grammar.rs by scripts/lua_forms.py) can be sent
through it, and the server reads each as that option."""

import dataclasses
import inspect
import json

import pytest

from redis_cell import Client, Fixed, Lease, Throttle, Window
from redis_cell.client import commands

from conftest import ROOT

GRAMMAR = json.loads((ROOT / "clients" / "grammar.json").read_text())

# The commands this client does not offer yet, and the issue that adds them: the test fails
# once one is offered, so that it is held to the table too.
NOT_YET = {}

# Each command's builder and a call of it that any one option can join and stay right.
CALLS = {
    "CL.THROTTLE": ("throttle", ("t", 10, 10, 60)),
    "CL.FIXED": ("fixed", ("f", 10, 60)),
    "CL.WINDOW": ("window", ("w", 10, 60)),
    "CL.LEASE": ("lease", ("l", 3, 60, "h")),
    "CL.RELEASE": ("release", ("l", "h")),
    "CL.HOLDERS": ("holders", ("l",)),
    "CL.ALL": ("all", ([Fixed("a", 10, 60)],)),
    "CL.SMOOTH": ("smooth", ("s", 10, 1)),
    "CL.TOP": ("top", ()),
    "CL.BAN": ("ban", ("b", 60)),
    "CL.UNBAN": ("unban", ("b",)),
}

# A right value of each kind of option (grammar.rs's Value), for a call on a fresh key.
VALUES = {"flag": True, "quantity": 2, "cells": 4, "span": 1, "factor": 2, "holder": "h",
          "timeout": 10, "listed": 3, "offset": -300}


def _sendable():
    """Every (command, option) a client sends: AT is the replication stream's alone."""
    for row in GRAMMAR["options"]:
        if row["replication_only"]:
            continue
        for command in row["takers"] + row["positional"]:
            yield pytest.param(command, row, id=f"{command} {row['keyword']}")


SENDABLE = list(_sendable())


def built(command, row):
    name, args = CALLS[command]
    if row["keyword"] == "HOLDER":
        # A holder holds a LEASE limiter's lease.
        args = ([Lease("a", 3, 60)],)
    options = {row["name"]: VALUES[row["value"]]}
    if row["keyword"] == "COLD":
        # COLD shapes a warm-up.
        options["warmup"] = VALUES["span"]
    if row["keyword"] == "OFFSET":
        # OFFSET moves an aligned grid.
        options["align"] = True
    return getattr(commands, name)(*args, **options)


def test_the_client_offers_every_command_but_those_still_to_come():
    offered = {command for command in GRAMMAR["commands"] if command not in NOT_YET}
    assert offered == set(CALLS)
    for command in NOT_YET:
        assert not hasattr(commands, command.split(".")[1].lower()), f"{command} is offered: hold it here"


@pytest.mark.parametrize("command,row", SENDABLE)
def test_every_option_goes_on_the_wire(command, row):
    if command in NOT_YET:
        pytest.skip(f"{command} comes with {NOT_YET[command]}")
    words = built(command, row)
    assert words[0] == command
    value = VALUES[row["value"]]
    if command in row["positional"]:
        # The quantity follows the parameters, with no keyword.
        assert value in words[len(CALLS[command][1]) + 1:]
    else:
        at = words.index(row["keyword"])
        if row["value"] != "flag":
            assert words[at + 1] == value


@pytest.mark.parametrize("command,row", SENDABLE)
def test_the_server_reads_every_option_the_client_sends(flavor, r, command, row):
    if command in NOT_YET:
        pytest.skip(f"{command} comes with {NOT_YET[command]}")
    if row["keyword"] == "BLOCK" and flavor == "library":
        pytest.skip("the library refuses BLOCK by name: waiting needs the module")
    if command in ("CL.TOP", "CL.BAN", "CL.UNBAN") and flavor == "library":
        pytest.skip(f"{command} is the module's alone")
    # Sent as the client sends its own calls: an option the server did not read as one would
    # be a syntax error, raised here.
    reply = Client(r)._call(*built(command, row))
    assert reply is not None


@pytest.mark.parametrize("command", [c for c in GRAMMAR["commands"] if c != "CL.ALL"])
def test_each_builder_takes_the_command_s_parameters_in_order(command):
    if command in NOT_YET:
        pytest.skip(f"{command} comes with {NOT_YET[command]}")
    name, _ = CALLS[command]
    positional = [p.name for p in inspect.signature(getattr(commands, name)).parameters.values()
                  if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD and p.default is p.empty]
    assert positional == GRAMMAR["params"][command]


def test_each_limiter_of_all_takes_its_command_s_numbers():
    # CL.ALL's limiters: their key, then the numbers of the command they stand for.
    for limiter, command in [(Throttle, "CL.THROTTLE"), (Fixed, "CL.FIXED"),
                             (Window, "CL.WINDOW"), (Lease, "CL.LEASE")]:
        fields = [f.name for f in dataclasses.fields(limiter) if f.default is dataclasses.MISSING]
        numbers = [p for p in GRAMMAR["params"][command] if p != "holder"]
        assert fields == numbers, limiter
