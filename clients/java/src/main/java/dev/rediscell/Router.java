package dev.rediscell;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Sends each call by its route, found on first use and remembered: the module's commands where
 * the server has loaded the module, else the Functions library's functions where it has
 * loaded the library. A server with neither is asked again on the next call, so that loading
 * either later is seen without a restart; a call that misses its route (the module gone after
 * a failover, the library flushed) has the route found again and is sent once more. A miss
 * means the server ran nothing, so the second send takes no units twice.
 */
final class Router {
  private final Transport transport;
  private volatile Route route;
  /** The module was taken on trust: the user may not ask COMMAND INFO. */
  private volatile boolean assumed;

  Router(Transport transport) {
    this.transport = transport;
  }

  /** The route calls take, found now if it is not known yet. */
  Route route() {
    Route known = route;
    return known != null ? known : find("");
  }

  /** Sends {@code args} (what follows the command's name) and returns the server's reply. */
  Object call(CellCommand command, List<String> args) {
    return call(command, args, -1);
  }

  /** The same, for a call the server may hold ({@code BLOCK}) up to {@code hold} ms (0: ever). */
  Object callHeld(CellCommand command, List<String> args, long hold) {
    return call(command, args, hold);
  }

  private Object call(CellCommand command, List<String> args, long held) {
    Route taken = route();
    try {
      return send(taken, command, args, held);
    } catch (CellException error) {
      if (!missed(taken, error)) {
        throw error;
      }
      route = null;
      // A module taken on trust and missing: only the library is left to ask about, and
      // asking COMMAND again would only be refused again.
      Route again = taken == Route.MODULE && assumed
          ? settle(library(), error.getMessage())
          : find(error.getMessage());
      try {
        return send(again, command, args, held);
      } catch (CellException second) {
        throw missed(again, second) ? new ModuleMissingException(second.getMessage()) : second;
      }
    }
  }

  private Object send(Route taken, CellCommand command, List<String> args, long hold) {
    Request request = request(taken, command, args);
    return hold >= 0 ? transport.sendHeld(request.held(hold)) : transport.send(request);
  }

  /**
   * The call on a route: the module's command, or the library's FCALL; its keys are the first
   * argument, or the {@code numkeys} that follow a count (CL.ALL's, or FCALL's).
   */
  private static Request request(Route taken, CellCommand command, List<String> args) {
    List<String> words = new ArrayList<>(args.size() + 3);
    if (taken == Route.MODULE) {
      words.add(command.command());
    } else {
      if (command.call() == CellCommand.Call.NONE) {
        throw new NeedsModuleException(command);
      }
      words.add(command.call().name());
      words.add(command.function());
      // CL.ALL's own numkeys leads its arguments; every other command has one key.
      if (command.keys() != CellCommand.Keys.NUMKEYS) {
        words.add("1");
      }
    }
    int count = words.size();
    words.addAll(args);
    return switch (command.keys()) {
      case NONE -> new Request(words, 0, 0);
      case FIRST -> new Request(words, count, 1);
      case NUMKEYS -> new Request(words, count + 1, numkeys(words.get(count)));
    };
  }

  private static int numkeys(String count) {
    try {
      return Integer.parseInt(count);
    } catch (NumberFormatException notACount) {
      throw new IllegalArgumentException("not a count of keys: " + count);
    }
  }

  /** Whether an error says the route taken is gone, rather than answering the call. */
  private static boolean missed(Route taken, CellException error) {
    String text = String.valueOf(error.getMessage()).toLowerCase(Locale.ROOT);
    return taken == Route.MODULE
        ? text.startsWith("err unknown command") && text.contains("cl.")
        : text.contains("function not found");
  }

  /** Asks the server what it has; {@code reply} is the error that sent it asking, if any. */
  private Route find(String reply) {
    return settle(detect(), reply);
  }

  private Route settle(Route found, String reply) {
    if (found == null) {
      throw new ModuleMissingException(reply);
    }
    route = found;
    return found;
  }

  private Route detect() {
    assumed = false;
    try {
      if (namesACommand(transport.send(Request.keyless("COMMAND", "INFO", "CL.THROTTLE")))) {
        return Route.MODULE;
      }
    } catch (CellException refused) {
      // COMMAND refused to this user: the module is taken on trust, and a call that misses
      // it says so.
      if (String.valueOf(refused.getMessage()).startsWith("NOPERM")) {
        assumed = true;
        return Route.MODULE;
      }
      throw refused;
    }
    return library();
  }

  /** The library, if the server has it loaded; null if not. */
  private Route library() {
    try {
      transport.send(Request.keyless("FCALL_RO", "cl_version", "0"));
      return Route.LIBRARY;
    } catch (CellException missing) {
      String text = String.valueOf(missing.getMessage()).toLowerCase(Locale.ROOT);
      if (text.contains("function not found") || text.startsWith("err unknown command")) {
        return null;
      }
      throw missing;
    }
  }

  /** COMMAND INFO's answer names the command: an array with an entry that is not nil. */
  private static boolean namesACommand(Object info) {
    return info instanceof List<?> entries && entries.stream().anyMatch(e -> e != null);
  }
}
