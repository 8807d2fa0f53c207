package cell

import (
	"context"
	"time"
)

// Request is one call as a Transport sends it: the command's words, where its keys lie among
// them, and whether the server may hold it.
type Request struct {
	// Words are the command and its arguments, as sent.
	Words []string
	// FirstKey is the index in Words of the first key; Keys is how many follow from there
	// (0: the call has no key, and any node may answer it).
	FirstKey, Keys int
	// Hold is how long the server may hold the call (BLOCK): negative for a call it answers
	// at once, 0 for as long as it takes. A held call goes on a connection of its own, is
	// never pipelined and is sent once.
	Hold time.Duration
}

// KeyNames are the call's keys, which a cluster client routes it by.
func (r Request) KeyNames() []string {
	if r.Keys <= 0 || r.FirstKey < 0 || r.FirstKey+r.Keys > len(r.Words) {
		return nil
	}
	return r.Words[r.FirstKey : r.FirstKey+r.Keys]
}

// Held reports whether the server may hold the call.
func (r Request) Held() bool {
	return r.Hold >= 0
}

// Transport sends calls over a client of the application's: the goredis and valkeygo packages
// each make one. A reply is an int64, a string, nil or a []any of those; a reply the server
// sends as an error is an error whose text is the server's.
type Transport interface {
	Do(ctx context.Context, req Request) (any, error)
	// Close closes what the Transport opened itself (the connections of held calls); the
	// application's client stays open.
	Close() error
}
