package dev.rediscell;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.Arrays;
import java.util.Locale;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/**
 * This client offers the module's whole grammar (clients/grammar.json, printed from its command
 * table): a method of {@link Cell} for every command, and one of {@link Options} for every
 * option a client may give, which puts the option's keyword in the call. An option or a
 * command the module gains and this client lacks fails here.
 */
class GrammarTest {
  private static JsonNode grammar() throws Exception {
    return new ObjectMapper().readTree(Servers.root().resolve("clients/grammar.json").toFile());
  }

  @Test
  void everyCommandIsAMethodOfCell() throws Exception {
    for (JsonNode command : grammar().get("commands")) {
      String name = command.asText().substring("CL.".length()).toLowerCase(Locale.ROOT);
      assertTrue(
          Arrays.stream(Cell.class.getDeclaredMethods())
              .anyMatch(m -> m.getName().equals(name) && Modifier.isPublic(m.getModifiers())),
          "Cell has no method for " + command.asText());
    }
  }

  @Test
  void theQuantityGoesWhereTheGrammarPutsIt() throws Exception {
    JsonNode quantity = null;
    for (JsonNode option : grammar().get("options")) {
      if (option.get("keyword").asText().equals("QUANTITY")) {
        quantity = option;
      }
    }
    if (quantity == null) {
      fail("the grammar has no QUANTITY");
      return;
    }
    Set<String> positional = new TreeSet<>();
    quantity.get("positional").forEach(command -> positional.add(command.asText()));
    Set<String> keyword = new TreeSet<>();
    quantity.get("takers").forEach(command -> keyword.add(command.asText()));
    for (CellCommand command : CellCommand.values()) {
      CellCommand.Quantity expected = positional.contains(command.command())
          ? CellCommand.Quantity.POSITIONAL
          : keyword.contains(command.command())
              ? CellCommand.Quantity.KEYWORD
              : CellCommand.Quantity.NONE;
      assertEquals(expected, command.quantity(), command.command());
    }
  }

  @Test
  void everyOptionIsAMethodOfOptionsThatNamesIt() throws Exception {
    for (JsonNode option : grammar().get("options")) {
      if (option.get("replication_only").asBoolean()) {
        continue;
      }
      String keyword = option.get("keyword").asText();
      String name = camel(option.get("name").asText());
      Method method = Arrays.stream(Options.class.getMethods())
          .filter(m -> m.getName().equals(name) && m.getReturnType() == Options.class)
          .findFirst()
          .orElse(null);
      if (method == null) {
        fail("Options has no " + name + "() for " + keyword);
        return;
      }
      Object[] value = switch (method.getParameterCount()) {
        case 0 -> new Object[0];
        case 1 -> new Object[] {method.getParameterTypes()[0] == String.class ? "x" : 2L};
        default -> throw new AssertionError(name + " takes more than one value");
      };
      Options set = (Options) method.invoke(Options.none(), value);
      if (name.equals("quantity")) {
        // Positional for most commands, and QUANTITY in CL.ALL: the Cell places it.
        assertTrue(set.quantity() == 2L, "quantity(2)");
      } else {
        assertTrue(set.words().contains(keyword), name + "() gives " + set.words());
      }
    }
  }

  private static String camel(String snake) {
    StringBuilder camel = new StringBuilder();
    boolean up = false;
    for (char c : snake.toCharArray()) {
      if (c == '_') {
        up = true;
      } else {
        camel.append(up ? Character.toUpperCase(c) : c);
        up = false;
      }
    }
    return camel.toString();
  }
}
