package cell

import "strings"

// The route table: each command, how the Functions library calls it, where its keys are and
// where its quantity goes. clients/protocol.json and clients/grammar.json are its one home;
// command_test.go holds this to both.

// call is how the library runs a command: FCALL, FCALL_RO, or not at all (the module's alone).
type libCall string

const (
	fcall   libCall = "FCALL"
	fcallRO libCall = "FCALL_RO"
	noCall  libCall = "none"
)

// keys is where a call's keys are: its first argument, a count and then the keys, or none.
type keys string

const (
	firstKey keys = "first"
	numKeys  keys = "numkeys"
	noKeys   keys = "none"
)

// quantity is where a call's quantity goes: after the parameters, as QUANTITY n, or nowhere.
type quantity int

const (
	positional quantity = iota
	keyword
	noQuantity
)

type command struct {
	name     string
	call     libCall
	keys     keys
	quantity quantity
	// ms: the command takes MS, as every one with a period, span or wait does.
	ms bool
}

var (
	cmdThrottle = command{"CL.THROTTLE", fcall, firstKey, positional, true}
	cmdFixed    = command{"CL.FIXED", fcall, firstKey, positional, true}
	cmdWindow   = command{"CL.WINDOW", fcall, firstKey, positional, true}
	cmdAll      = command{"CL.ALL", fcall, numKeys, keyword, true}
	cmdLease    = command{"CL.LEASE", fcall, firstKey, noQuantity, true}
	cmdRelease  = command{"CL.RELEASE", fcall, firstKey, noQuantity, false}
	cmdHolders  = command{"CL.HOLDERS", fcallRO, firstKey, noQuantity, true}
	cmdSmooth   = command{"CL.SMOOTH", fcall, firstKey, positional, true}
	cmdTop      = command{"CL.TOP", noCall, noKeys, noQuantity, false}
	cmdBan      = command{"CL.BAN", noCall, firstKey, noQuantity, true}
	cmdUnban    = command{"CL.UNBAN", noCall, firstKey, noQuantity, false}
)

// commands is every command the client sends, for the tests that hold the table to its homes.
var commands = []command{
	cmdThrottle, cmdFixed, cmdWindow, cmdAll, cmdLease, cmdRelease, cmdHolders, cmdSmooth,
	cmdTop, cmdBan, cmdUnban,
}

// function is the library's function for the command: cl_throttle for CL.THROTTLE.
func (c command) function() string {
	return "cl_" + strings.ToLower(strings.TrimPrefix(c.name, "CL."))
}
