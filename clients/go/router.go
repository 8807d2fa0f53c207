package cell

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Route is where a Cell's calls go.
type Route int32

const (
	unknown Route = iota
	// Module: the module's CL.* commands.
	Module
	// Library: the Functions library's functions, FCALL cl_throttle and the rest.
	Library
)

func (r Route) String() string {
	switch r {
	case Module:
		return "module"
	case Library:
		return "library"
	}
	return "unknown"
}

// router sends each call by its route, found on first use and remembered: the module's commands
// where the server has loaded the module, else the library's functions where it has loaded
// the library. A server with neither is asked again on the next call, so that loading either
// later is seen without a restart; a call that misses its route (the module gone after a
// failover, the library flushed) has the route found again and is sent once more. A miss means
// the server ran nothing, so the second send takes no units twice.
type router struct {
	transport Transport
	route     atomic.Int32
	// assumed: the module was taken on trust, as the user may not ask COMMAND INFO.
	assumed atomic.Bool
}

func (r *router) current(ctx context.Context) (Route, error) {
	if known := Route(r.route.Load()); known != unknown {
		return known, nil
	}
	return r.find(ctx, "")
}

// call sends args (what follows the command's name), held up to hold if it is not negative.
func (r *router) call(ctx context.Context, cmd command, args []string, hold time.Duration) (any, error) {
	taken, err := r.current(ctx)
	if err != nil {
		return nil, err
	}
	reply, err := r.send(ctx, taken, cmd, args, hold)
	if err == nil || !missed(taken, err) {
		return reply, err
	}
	r.route.Store(int32(unknown))
	// A module taken on trust and missing: only the library is left to ask about, and asking
	// COMMAND again would only be refused again.
	var again Route
	if taken == Module && r.assumed.Load() {
		again, err = r.settle(ctx, err.Error(), r.library)
	} else {
		again, err = r.find(ctx, err.Error())
	}
	if err != nil {
		return nil, err
	}
	reply, err = r.send(ctx, again, cmd, args, hold)
	if err != nil && missed(again, err) {
		return nil, &ModuleMissingError{Reply: err.Error()}
	}
	return reply, err
}

func (r *router) send(ctx context.Context, taken Route, cmd command, args []string, hold time.Duration) (any, error) {
	req, err := request(taken, cmd, args)
	if err != nil {
		return nil, err
	}
	req.Hold = hold
	return r.transport.Do(ctx, req)
}

// request is the call on a route: the module's command, or the library's FCALL; its keys are
// the first argument, or the numkeys that follow a count (CL.ALL's, or FCALL's).
func request(taken Route, cmd command, args []string) (Request, error) {
	words := make([]string, 0, len(args)+3)
	if taken == Module {
		words = append(words, cmd.name)
	} else {
		if cmd.call == noCall {
			return Request{}, &NeedsModuleError{cmd.name}
		}
		words = append(words, string(cmd.call), cmd.function())
		// CL.ALL's own numkeys leads its arguments; every other command has one key.
		if cmd.keys != numKeys {
			words = append(words, "1")
		}
	}
	at := len(words)
	words = append(words, args...)
	switch cmd.keys {
	case firstKey:
		return Request{Words: words, FirstKey: at, Keys: 1, Hold: -1}, nil
	case numKeys:
		if at >= len(words) {
			return Request{}, errors.New("cell: " + cmd.name + " without a count of keys")
		}
		n, err := strconv.Atoi(words[at])
		if err != nil || n < 1 || at+1+n > len(words) {
			return Request{}, errors.New("cell: not a count of keys: " + words[at])
		}
		return Request{Words: words, FirstKey: at + 1, Keys: n, Hold: -1}, nil
	}
	return Request{Words: words, Hold: -1}, nil
}

// missed reports whether an error says the route taken is gone, rather than answering.
func missed(taken Route, err error) bool {
	text := strings.ToLower(err.Error())
	if taken == Module {
		return strings.HasPrefix(text, "err unknown command") && strings.Contains(text, "cl.")
	}
	return strings.Contains(text, "function not found")
}

// find asks the server what it has; reply is the error that sent it asking, if any.
func (r *router) find(ctx context.Context, reply string) (Route, error) {
	return r.settle(ctx, reply, r.detect)
}

func (r *router) settle(ctx context.Context, reply string, ask func(context.Context) (Route, error)) (Route, error) {
	found, err := ask(ctx)
	if err != nil {
		return unknown, err
	}
	if found == unknown {
		return unknown, &ModuleMissingError{Reply: reply}
	}
	r.route.Store(int32(found))
	return found, nil
}

func (r *router) detect(ctx context.Context) (Route, error) {
	r.assumed.Store(false)
	info, err := r.transport.Do(ctx, keyless("COMMAND", "INFO", "CL.THROTTLE"))
	if err != nil {
		// COMMAND refused to this user: the module is taken on trust, and a call that misses
		// it says so.
		if strings.HasPrefix(err.Error(), "NOPERM") {
			r.assumed.Store(true)
			return Module, nil
		}
		return unknown, err
	}
	if entries, ok := info.([]any); ok {
		for _, entry := range entries {
			if entry != nil {
				return Module, nil
			}
		}
	}
	return r.library(ctx)
}

// library is Library where the server has the library loaded, unknown where it has not.
func (r *router) library(ctx context.Context) (Route, error) {
	_, err := r.transport.Do(ctx, keyless("FCALL_RO", "cl_version", "0"))
	if err == nil {
		return Library, nil
	}
	text := strings.ToLower(err.Error())
	if strings.Contains(text, "function not found") || strings.HasPrefix(text, "err unknown command") {
		return unknown, nil
	}
	return unknown, err
}

func keyless(words ...string) Request {
	return Request{Words: words, Hold: -1}
}
