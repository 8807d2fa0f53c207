package cellhttp

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"

	"rediscell.dev/cell"
)

// calendarSeconds is a calendar window's w: its unit's longest length (a month of 31 days, a
// year of 366), so that the rate a policy states is never over the true one.
var calendarSeconds = map[cell.Calendar]int64{
	cell.Day: 86400, cell.Week: 604800, cell.Month: 2678400, cell.Year: 31622400,
}

// quota is the policy as the draft states one: q units in a window of w seconds. A window's
// are its limit and period (rounded up to whole seconds); GCRA's MaxBurst + 1 units come back
// one every Period / Count, so its window is their whole return, rounded up: a rate stated
// under the true one, never over.
func quota(l cell.Limiter) (q, w int64) {
	switch v := l.(type) {
	case cell.Throttle:
		units := v.MaxBurst + 1
		back := new(big.Int).Mul(big.NewInt(units), big.NewInt(int64(v.Period)))
		perSecond := new(big.Int).Mul(big.NewInt(v.Count), big.NewInt(int64(time.Second)))
		seconds, rest := new(big.Int).QuoRem(back, perSecond, new(big.Int))
		if rest.Sign() > 0 {
			seconds.Add(seconds, big.NewInt(1))
		}
		return units, max(1, seconds.Int64())
	case cell.Fixed:
		if v.Calendar != "" {
			return v.Limit, calendarSeconds[v.Calendar]
		}
		return v.Limit, seconds(v.Period)
	case cell.Window:
		return v.Limit, seconds(v.Period)
	}
	return 0, 0
}

// seconds is a duration in whole seconds, rounded up, as a header states a wait.
func seconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Second - 1) / time.Second)
}

// binding is the limit the fields describe. Denied: the denying limit with the longest wait
// (one that never fits, longest of all), as CL.ALL picks it, so that a retry after
// Retry-After finds every limit open. Admitted: the fewest units left relative to the limit,
// ties to the longest ResetAfter, then to the first declared.
func binding(all []decided) decided {
	wait := func(r cell.Reply) time.Duration {
		if r.RetryAfter < 0 {
			return time.Duration(1<<63 - 1)
		}
		return r.RetryAfter
	}
	var best *decided
	for at := range all {
		each := &all[at]
		if each.reply.Limited && (best == nil || !best.reply.Limited || wait(each.reply) > wait(best.reply)) {
			best = each
		}
	}
	if best != nil {
		return *best
	}
	best = &all[0]
	for at := range all[1:] {
		a, b := all[at+1].reply, best.reply
		x, y := new(big.Int).Mul(big.NewInt(a.Remaining), big.NewInt(b.Limit)), new(big.Int).Mul(big.NewInt(b.Remaining), big.NewInt(a.Limit))
		if c := x.Cmp(y); c < 0 || c == 0 && a.ResetAfter > b.ResetAfter {
			best = &all[at+1]
		}
	}
	return *best
}

// waitOf is t: the wait until this request fits when denied, else until the whole quota is
// back.
func waitOf(r cell.Reply) int64 {
	if r.Limited && r.RetryAfter >= 0 {
		return seconds(r.RetryAfter)
	}
	return seconds(r.ResetAfter)
}

// fields are a decided response's header fields, in the forms asked for.
func fields(applied []limit, bound decided, standard string, legacy bool, now time.Time) map[string]string {
	reply := bound.reply
	wait := waitOf(reply)
	out := map[string]string{}
	switch standard {
	case "draft-11":
		policies := make([]string, 0, len(applied))
		for _, each := range applied {
			q, w := quota(each.limiter)
			policies = append(policies, fmt.Sprintf("%q;q=%d;w=%d", each.name, q, w))
		}
		out["RateLimit-Policy"] = strings.Join(policies, ", ")
		out["RateLimit"] = fmt.Sprintf("%q;r=%d;t=%d", bound.limit.name, reply.Remaining, wait)
	case "draft-6", "draft-7":
		policies := make([]string, 0, len(applied))
		for _, each := range applied {
			q, w := quota(each.limiter)
			policies = append(policies, fmt.Sprintf("%d;w=%d", q, w))
		}
		out["RateLimit-Policy"] = strings.Join(policies, ", ")
		if standard == "draft-7" {
			out["RateLimit"] = fmt.Sprintf("limit=%d, remaining=%d, reset=%d", reply.Limit, reply.Remaining, wait)
		} else {
			out["RateLimit-Limit"] = strconv.FormatInt(reply.Limit, 10)
			out["RateLimit-Remaining"] = strconv.FormatInt(reply.Remaining, 10)
			out["RateLimit-Reset"] = strconv.FormatInt(wait, 10)
		}
	}
	if legacy {
		out["X-RateLimit-Limit"] = strconv.FormatInt(reply.Limit, 10)
		out["X-RateLimit-Remaining"] = strconv.FormatInt(reply.Remaining, 10)
		// An instant (Unix seconds), as these headers have always sent it, by this host's clock.
		out["X-RateLimit-Reset"] = strconv.FormatInt(seconds(time.Duration(now.UnixNano()))+wait, 10)
	}
	if reply.Limited {
		out["Retry-After"] = strconv.FormatInt(wait, 10)
	}
	return out
}

// checkNumbers holds a limiter's numbers to the module's bounds.
func checkNumbers(l cell.Limiter) error {
	whole := func(what string, d time.Duration) error {
		if d < time.Millisecond || d%time.Millisecond != 0 {
			return fmt.Errorf("cellhttp: %s is whole milliseconds, at least one, not %v", what, d)
		}
		return nil
	}
	switch v := l.(type) {
	case cell.Throttle:
		if v.MaxBurst < 0 || v.Count < 1 {
			return fmt.Errorf("cellhttp: a throttle's MaxBurst is at least 0 and its Count at least 1, not %d and %d", v.MaxBurst, v.Count)
		}
		return whole("a throttle's Period", v.Period)
	case cell.Fixed:
		if v.Limit < 1 {
			return fmt.Errorf("cellhttp: a limit is at least 1, not %d", v.Limit)
		}
		calendar := v.Calendar != ""
		if _, ok := calendarSeconds[v.Calendar]; calendar && !ok {
			return fmt.Errorf("cellhttp: %q is no calendar unit", v.Calendar)
		}
		if v.Align && calendar {
			return fmt.Errorf("cellhttp: Align is for a period: a calendar period keeps to the calendar already")
		}
		if v.Offset != 0 && (v.Offset < -1439 || v.Offset > 1439 || !v.Align && !calendar) {
			return fmt.Errorf("cellhttp: Offset is -1439 to 1439 minutes ahead of UTC, with Align or a calendar period, not %d", v.Offset)
		}
		if calendar {
			return nil
		}
		return whole("a fixed window's Period", v.Period)
	case cell.Window:
		if v.Limit < 1 {
			return fmt.Errorf("cellhttp: a limit is at least 1, not %d", v.Limit)
		}
		if err := whole("a window's Period", v.Period); err != nil {
			return err
		}
		if v.Buckets != 0 && (v.Buckets < 2 || v.Buckets > 1024 || v.Period.Milliseconds()%v.Buckets != 0) {
			return fmt.Errorf("cellhttp: Buckets is 2 to 1024 cells that cut the period into whole milliseconds, not %d", v.Buckets)
		}
	}
	return nil
}
