package dev.rediscell;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/** This client's table is the clients' one (clients/protocol.json), command for command. */
class RouteTableTest {
  @Test
  void everyCommandRoutesAsTheProtocolSays() throws Exception {
    JsonNode commands = new ObjectMapper()
        .readTree(Servers.root().resolve("clients/protocol.json").toFile())
        .get("commands");
    Map<String, String> theirs = new TreeMap<>();
    for (Map.Entry<String, JsonNode> entry : commands.properties()) {
      theirs.put(entry.getKey(),
          entry.getValue().get("call").asText() + " " + entry.getValue().get("keys").asText());
    }
    Map<String, String> ours = new TreeMap<>();
    for (CellCommand command : CellCommand.values()) {
      String call = command.call() == CellCommand.Call.NONE ? "none" : command.call().name();
      ours.put(command.command(), call + " " + command.keys().name().toLowerCase(Locale.ROOT));
    }
    assertEquals(theirs, ours);
  }
}
