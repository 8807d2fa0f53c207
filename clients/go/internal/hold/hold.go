// Package hold is what the transports share about held calls (BLOCK): the context one is sent
// under, and the redirects one follows.
package hold

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Context is the context a held call is sent under. The call's hold was shortened to the
// caller's deadline, so the server answers by then: the context outlives that deadline by
// grace, so that the answer is read rather than cut (a cut answer may have taken units). It
// ends at once when the caller's context is cancelled, and a finite hold with no deadline is
// given up grace after its timeout. stop releases it.
func Context(ctx context.Context, hold, grace time.Duration) (held context.Context, stop func()) {
	base := context.WithoutCancel(ctx)
	var until time.Time
	if deadline, ok := ctx.Deadline(); ok {
		until = deadline.Add(grace)
	} else if hold > 0 {
		until = time.Now().Add(hold + grace)
	}
	var cancel context.CancelFunc
	if until.IsZero() {
		held, cancel = context.WithCancel(base)
	} else {
		held, cancel = context.WithDeadline(base, until)
	}
	unwatch := context.AfterFunc(ctx, func() {
		if errors.Is(ctx.Err(), context.Canceled) {
			cancel()
		}
	})
	return held, func() {
		unwatch()
		cancel()
	}
}

// Err is the error of a held call that failed: the caller's, where its context was cancelled.
func Err(ctx context.Context, err error) error {
	if errors.Is(ctx.Err(), context.Canceled) {
		return ctx.Err()
	}
	return err
}

// redirects is how many MOVED or ASK replies a held call follows.
const redirects = 3

// MinGrace is the least time a held call's answer is waited for past its deadline.
const MinGrace = 3 * time.Second

// Follow sends a held call by send to addr, then to each node a MOVED or ASK reply names
// (asking: after ASKING), calling moved on a MOVED. Neither reply ran the call, so sending it
// there is still sending it once.
func Follow(addr string, send func(addr string, asking bool) (any, error), moved func()) (any, error) {
	asking := false
	for range redirects {
		reply, err := send(addr, asking)
		to, wasMoved, redirected := redirect(err)
		if !redirected {
			return reply, err
		}
		if wasMoved && moved != nil {
			moved()
		}
		addr, asking = to, !wasMoved
	}
	return nil, fmt.Errorf("cell: a held call was redirected more than %d times", redirects)
}

// redirect reads a MOVED or ASK reply: the node it names.
func redirect(err error) (addr string, moved, ok bool) {
	if err == nil {
		return "", false, false
	}
	fields := strings.Fields(err.Error())
	if len(fields) != 3 || (fields[0] != "MOVED" && fields[0] != "ASK") {
		return "", false, false
	}
	return fields[2], fields[0] == "MOVED", true
}
