// Package cellhttp limits net/http routes with redis-cell's limiters, through a Cell: the peer
// of the Python (redis_cell.asgi) and Express (RouteLimiter) middleware, with the same keys,
// the same rule for limits of several identities, and the same fields (docs/clients.md, "Web
// middleware").
//
// A request is charged once on each limit, or on none. The limits that count one identity
// share its hash tag, so they are decided in one CL.ALL, all or nothing, on the node that
// holds them. Limits on different identities may sit on different nodes of a cluster, where
// no single call can take them: each identity's are decided in turn, in the order the route
// first names it, and when one denies, what the earlier ones took is given back (REFUND).
package cellhttp

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"

	"rediscell.dev/cell"
)

// Limit is one limit of a route: a cell.Throttle, cell.Fixed or cell.Window whose Key is the
// policy's name, and By, the identity it counts (ClientAddress when zero).
type Limit struct {
	Limiter cell.Limiter
	By      Identity
}

// Identity is what a limit counts a request as; "" means the limit does not apply to it. Its
// name tells identities apart, as functions do not compare.
type Identity struct {
	name string
	of   func(*http.Request) string
}

// ClientAddress counts the address the request came from (behind a proxy, the proxy's: give
// an Identity of your own that reads the proxy's header), an IPv4 client of a dual-stack
// server by its IPv4 address.
func ClientAddress() Identity {
	return Identity{"address", func(r *http.Request) string {
		host, _, err := net.SplitHostPort(r.RemoteAddr)
		if err != nil {
			host = r.RemoteAddr
		}
		if mapped := strings.TrimPrefix(host, "::ffff:"); strings.Contains(mapped, ".") {
			return mapped
		}
		return host
	}}
}

// Header counts the request's header name (an API key, say), its first value where it came
// more than once; a request without it is not counted.
func Header(name string) Identity {
	return Identity{"header " + http.CanonicalHeaderKey(name), func(r *http.Request) string {
		return r.Header.Get(name)
	}}
}

// Func counts what of says of the request, named name.
func Func(name string, of func(*http.Request) string) Identity {
	return Identity{"func " + name, of}
}

// Limiter is the limits of an app's routes, decided on one Cell.
type Limiter struct {
	// Cell decides: the module, or the library where the module is missing.
	Cell *cell.Cell
	// Prefix is what every key starts with ("ratelimit:" when empty): a key is
	// <prefix><policy>:{<identity>}, so routes that name one policy share its count.
	Prefix string
	// FailOpen lets a request through, without fields, when the server fails to answer;
	// without it such a request is refused with a 503.
	FailOpen bool
	// StandardHeaders is "draft-11" (when empty), "draft-7", "draft-6", or "none".
	StandardHeaders string
	// LegacyHeaders adds the X-RateLimit-* triple.
	LegacyHeaders bool
	// OnDenied answers a 429 once its fields are set; by default a short text body.
	OnDenied http.Handler
	// OnFailed answers a 503 once the request was refused; by default a short text body.
	OnFailed func(http.ResponseWriter, *http.Request, error)
	// Log is told of each request left undecided (log.Printf when nil).
	Log func(message string, err error)

	mu       sync.Mutex
	policies map[string]policy
}

// policy is what a policy's name stands for: a limiter (the limiters are values, equal when
// their numbers are) and the name of the identity it counts.
type policy struct {
	limiter cell.Limiter
	by      string
}

// mostLimits is CL.ALL's most keys.
const mostLimits = 16

// abandoned is decide's answer for a request whose client went away while it was decided.
const abandoned = -1

// standards are the forms of StandardHeaders.
var standards = map[string]bool{"": true, "draft-11": true, "draft-7": true, "draft-6": true, "none": true}

// name keeps a policy's name to what needs no escaping in keys or Structured Field Strings.
var name = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)

type limit struct {
	name    string
	limiter cell.Limiter
	by      Identity
}

// Limit is a route's limits as middleware. Each policy's name is held to one limiter and one
// identity across the Limiter's routes (the key names neither), and its numbers are checked
// here as the module bounds them: numbers the server refuses would refuse every request, or,
// failing open, let every one through.
func (l *Limiter) Limit(limits ...Limit) (func(http.Handler) http.Handler, error) {
	if !standards[l.StandardHeaders] {
		return nil, fmt.Errorf("cellhttp: StandardHeaders is draft-11, draft-7, draft-6 or none, not %q", l.StandardHeaders)
	}
	if len(limits) == 0 || len(limits) > mostLimits {
		return nil, fmt.Errorf("cellhttp: a route takes 1 to %d limits, as CL.ALL does, not %d", mostLimits, len(limits))
	}
	checked := make([]limit, 0, len(limits))
	seen := map[string]bool{}
	for _, given := range limits {
		each, err := check(given)
		if err != nil {
			return nil, err
		}
		if seen[each.name] {
			return nil, fmt.Errorf("cellhttp: a route names each policy once, not %s twice", each.name)
		}
		seen[each.name] = true
		checked = append(checked, each)
	}
	if err := l.claim(checked); err != nil {
		return nil, err
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			status, headers, err := l.decide(r.Context(), r, checked)
			for field, value := range headers {
				w.Header().Set(field, value)
			}
			switch status {
			case abandoned:
				return
			case http.StatusTooManyRequests:
				if l.OnDenied != nil {
					l.OnDenied.ServeHTTP(w, r)
					return
				}
				http.Error(w, "Too Many Requests", status)
			case http.StatusServiceUnavailable:
				if l.OnFailed != nil {
					l.OnFailed(w, r, err)
					return
				}
				http.Error(w, "Service Unavailable", status)
			default:
				next.ServeHTTP(w, r)
			}
		})
	}, nil
}

func check(given Limit) (limit, error) {
	key, err := policyName(given.Limiter)
	if err != nil {
		return limit{}, err
	}
	if !name.MatchString(key) {
		return limit{}, fmt.Errorf("cellhttp: a policy's name is letters, digits, '_', '-' and '.', not %q", key)
	}
	by := given.By
	if by.of == nil {
		by = ClientAddress()
	}
	if err := checkNumbers(given.Limiter); err != nil {
		return limit{}, err
	}
	return limit{name: key, limiter: given.Limiter, by: by}, nil
}

// policyName is a route's limiter's Key, the policy's name.
func policyName(l cell.Limiter) (string, error) {
	switch v := l.(type) {
	case cell.Throttle:
		return v.Key, nil
	case cell.Fixed:
		return v.Key, nil
	case cell.Window:
		return v.Key, nil
	}
	return "", errors.New("cellhttp: a route's limiter is a cell.Throttle, cell.Fixed or cell.Window")
}

func (l *Limiter) claim(limits []limit) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.policies == nil {
		l.policies = map[string]policy{}
	}
	for _, each := range limits {
		held, ok := l.policies[each.name]
		if ok && held != (policy{each.limiter, each.by.name}) {
			return fmt.Errorf("cellhttp: the policy %s is declared already, with another limiter or identity", each.name)
		}
	}
	for _, each := range limits {
		l.policies[each.name] = policy{each.limiter, each.by.name}
	}
	return nil
}

// decided is one limit's answer, with the identity it counted.
type decided struct {
	limit    limit
	reply    cell.Reply
	identity string
}

// decide charges the request on every limit that applies to it, or on none.
func (l *Limiter) decide(ctx context.Context, r *http.Request, limits []limit) (int, map[string]string, error) {
	var order []string
	groups := map[string][]limit{}
	var applied []limit
	for _, each := range limits {
		identity := each.by.of(r)
		if identity == "" {
			continue
		}
		if _, ok := groups[identity]; !ok {
			order = append(order, identity)
		}
		groups[identity] = append(groups[identity], each)
	}
	for _, identity := range order {
		applied = append(applied, groups[identity]...)
	}
	if len(applied) == 0 {
		return 0, nil, nil
	}
	var all []decided
	var charged [][]cell.Limiter
	for _, identity := range order {
		keyed := make([]cell.Limiter, 0, len(groups[identity]))
		for _, each := range groups[identity] {
			keyed = append(keyed, withKey(each.limiter, l.prefix()+each.name+":{"+tag(identity)+"}"))
		}
		replies, err := l.Cell.AllDetail(ctx, keyed)
		if err == nil && len(replies) != len(keyed) {
			err = fmt.Errorf("cellhttp: CL.ALL answered %d limiters of %d", len(replies), len(keyed))
		}
		if err != nil && errors.Is(ctx.Err(), context.Canceled) {
			// The client went away: no one to answer, and nothing failed on the server's side.
			// What earlier identities took is given back; this identity's call may have been
			// decided as the request ended, and stays so.
			l.giveBack(ctx, charged)
			return abandoned, nil, err
		}
		if err != nil {
			if l.FailOpen {
				// What was taken stays taken: the request goes on, as if every limit admitted.
				l.log("rate limits undecided, the request let through", err)
				return 0, nil, nil
			}
			l.log("rate limits undecided, the request refused (503)", err)
			l.giveBack(ctx, charged)
			return http.StatusServiceUnavailable, nil, err
		}
		denied := false
		for at, each := range groups[identity] {
			all = append(all, decided{each, replies[at], identity})
			denied = denied || replies[at].Limited
		}
		if denied {
			l.giveBack(ctx, charged)
			break
		}
		charged = append(charged, keyed)
	}
	// Every identity asked added its limits' replies, or returned: all holds one at least.
	bound := binding(all)
	headers := fields(applied, bound, l.standard(), l.LegacyHeaders, time.Now())
	if bound.reply.Limited {
		return http.StatusTooManyRequests, headers, nil
	}
	return 0, headers, nil
}

// giveBack refunds what earlier identities' calls took; a refund that fails is logged.
func (l *Limiter) giveBack(ctx context.Context, charged [][]cell.Limiter) {
	for _, keyed := range charged {
		if _, err := l.Cell.All(context.WithoutCancel(ctx), keyed, cell.Refund()); err != nil {
			l.log("a refund of rate limits failed", err)
		}
	}
}

func (l *Limiter) prefix() string {
	if l.Prefix == "" {
		return "ratelimit:"
	}
	return l.Prefix
}

func (l *Limiter) standard() string {
	if l.StandardHeaders == "" {
		return "draft-11"
	}
	return l.StandardHeaders
}

func (l *Limiter) log(message string, err error) {
	if l.Log != nil {
		l.Log(message, err)
		return
	}
	log.Printf("cellhttp: %s: %v", message, err)
}

func withKey(l cell.Limiter, key string) cell.Limiter {
	switch v := l.(type) {
	case cell.Throttle:
		v.Key = key
		return v
	case cell.Fixed:
		v.Key = key
		return v
	case cell.Window:
		v.Key = key
		return v
	}
	return l
}

// tag is the identity as a hash tag's content: braces escaped (with %), as the other
// middleware do.
func tag(identity string) string {
	return strings.NewReplacer("%", "%25", "{", "%7B", "}", "%7D").Replace(identity)
}
