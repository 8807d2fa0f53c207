"""The client reads servers' replies and routes commands as clients/protocol.json says, the
one table the Node package is held to as well; and that table's commands are the module's
(COMMAND INFO of a real server with the module loaded)."""

import json

import pytest
import redis
from redis._parsers import BaseParser
from redis.exceptions import NoScriptError

from redis_cell.errors import ModuleMissingError, NeedsModuleError, explained
from redis_cell.routing import _function_missing, _no_functions, _refused, fcall_words

from conftest import ROOT

PROTOCOL = json.loads((ROOT / "clients" / "protocol.json").read_text())


def meaning(to: str, reply: str) -> str:
    """What this client makes of `reply`, the server's answer to `to`, as redis-py parses it."""
    error = BaseParser.parse_error(reply)
    if isinstance(error, NoScriptError):
        # redis-py's Script sends the script again with EVAL itself.
        return "script_missing"
    if to.startswith("CL.") or to == "EVALSHA":
        return "module_missing" if isinstance(explained(error), ModuleMissingError) else "answer"
    if _refused(error):
        return "refused"
    if _no_functions(error):
        return "no_functions"
    if _function_missing(error):
        return "library_missing"
    return "answer"


@pytest.mark.parametrize("row", PROTOCOL["replies"], ids=lambda row: f"{row['to']}: {row['reply'][:40]}")
def test_each_reply_means_what_the_table_says(row):
    assert meaning(row["to"], row["reply"]) == row["means"]
    assert row["means"] in PROTOCOL["meanings"]


@pytest.mark.parametrize("command", sorted(PROTOCOL["commands"]))
def test_each_command_goes_to_the_library_as_the_table_says(command):
    how = PROTOCOL["commands"][command]
    if how["call"] == "none":
        with pytest.raises(NeedsModuleError, match=command):
            fcall_words([command, "COUNT", 5])
        return
    if how["keys"] == "numkeys":
        words = [command, 2, "a", "b", "FIXED", 1, 1, "FIXED", 1, 1]
        keys, args = ["a", "b"], ["FIXED", 1, 1, "FIXED", 1, 1]
    else:
        words = [command, "a", 1, 1]
        keys, args = ["a"], [1, 1]
    fcall, sent_keys = fcall_words(words)
    name = command.lower().replace(".", "_")
    assert fcall == [how["call"], name, len(keys), *keys, *args]
    assert sent_keys == keys


def test_the_table_s_commands_are_the_module_s(module_server):
    con = redis.Redis(port=module_server)
    try:
        # Every command of the module is in the table, and the table has no other.
        module = con.execute_command("COMMAND LIST FILTERBY MODULE redis-cell")
        assert {name.decode().upper() for name in module} == set(PROTOCOL["commands"])
        for command, how in PROTOCOL["commands"].items():
            [entry] = con.execute_command("COMMAND INFO", command)
            _, _, flags, first_key = entry[:4]
            flags = {flag.decode() if isinstance(flag, bytes) else flag for flag in flags}
            assert ("readonly" in flags) == (how["call"] == "FCALL_RO"), command
            # The first argument, or numkeys keys that the command reports itself.
            assert (first_key == 0 and "movablekeys" in flags) == (how["keys"] == "numkeys"), command
    finally:
        con.close()
