package cell

import "fmt"

const howToLoad = "the server has no redis-cell module loaded, so its CL.* commands are unknown there, " +
	"and no redis-cell Functions library either: load the module with MODULE LOAD " +
	"/path/to/libredis_cell.so (or a loadmodule line in the server's configuration), or, where no " +
	"module can be loaded, the library with FUNCTION LOAD and redis_cell.lua (lua/dist in a " +
	"checkout, or the release bundle)"

// ModuleMissingError says the server has loaded neither the module nor its Functions library.
type ModuleMissingError struct {
	// Reply is what the server answered, if anything.
	Reply string
}

func (e *ModuleMissingError) Error() string {
	if e.Reply == "" {
		return "cell: " + howToLoad
	}
	return fmt.Sprintf("cell: %s (the server said: %s)", howToLoad, e.Reply)
}

// NeedsModuleError refuses, unsent, a command the Functions library does not have, where the
// calls go to the library.
type NeedsModuleError struct {
	Command string
}

func (e *NeedsModuleError) Error() string {
	return "cell: " + e.Command + " is the redis-cell module's alone, and this server has only " +
		"its Functions library: load the module to use it"
}

// ReplyError says a reply did not have the shape its command answers.
type ReplyError struct {
	Command string
	Reply   any
}

func (e *ReplyError) Error() string {
	return fmt.Sprintf("cell: not %s's reply: %v", e.Command, e.Reply)
}
