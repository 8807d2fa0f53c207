package cell

import (
	"fmt"
	"strconv"
	"time"
)

// Option is one of a call's options beyond its parameters: one function for each option of
// the module's grammar (clients/grammar.json, which table_test.go holds this to), named as
// the grammar names it: DryRun for DRYRUN. One set serves every command, and a command answers
// an option it does not take with the limiter's own error, as the module and the library do.
//
// Two rows have no function: MS, which every call sends (periods, spans and waits go in
// milliseconds, and come back as time.Duration), and AT, which only replication sends.
type Option func(*settings) error

// settings is what a call's options add up to.
type settings struct {
	quantity int64
	words    []string
	// block is BLOCK's timeout, negative without BLOCK.
	block time.Duration
}

func (c *settings) add(keyword string, value ...string) {
	c.words = append(c.words, keyword)
	c.words = append(c.words, value...)
}

func flag(keyword string) Option {
	return func(c *settings) error {
		c.add(keyword)
		return nil
	}
}

func number(keyword string, n int64) Option {
	return func(c *settings) error {
		c.add(keyword, strconv.FormatInt(n, 10))
		return nil
	}
}

func span(keyword string, d time.Duration) Option {
	return func(c *settings) error {
		ms, err := millis(keyword, d)
		if err != nil {
			return err
		}
		c.add(keyword, ms)
		return nil
	}
}

// Quantity is how many units the call takes (0 looks and takes none); one without it.
func Quantity(n int64) Option {
	return func(c *settings) error {
		c.quantity = n
		return nil
	}
}

// DryRun asks, and takes nothing (DRYRUN).
func DryRun() Option { return flag("DRYRUN") }

// Refund gives the quantity back (REFUND).
func Refund() Option { return flag("REFUND") }

// AtMost takes what fits now, up to the quantity (ATMOST): the reply's Granted.
func AtMost() Option { return flag("ATMOST") }

// CountDenied has CL.FIXED count denied calls too, as the INCR recipe does (COUNTDENIED).
func CountDenied() Option { return flag("COUNTDENIED") }

// Align lays CL.FIXED's windows on the epoch's multiples of the period (ALIGN).
func Align() Option { return flag("ALIGN") }

// Offset puts CL.FIXED's calendar or aligned windows in a local time, minutes ahead of UTC
// (OFFSET minutes).
func Offset(minutes int) Option { return number("OFFSET", int64(minutes)) }

// Buckets cuts CL.WINDOW's period into n cells (BUCKETS n).
func Buckets(n int64) Option { return number("BUCKETS", n) }

// Ban locks the key out for d when its limiter denies (BAN span).
func Ban(d time.Duration) Option { return span("BAN", d) }

// Burst is CL.SMOOTH's stored permits, as a span of its rate (BURST span).
func Burst(d time.Duration) Option { return span("BURST", d) }

// Warmup is CL.SMOOTH's warm-up (WARMUP span).
func Warmup(d time.Duration) Option { return span("WARMUP", d) }

// Cold is CL.SMOOTH's cold factor during a warm-up (COLD factor).
func Cold(factor int64) Option { return number("COLD", factor) }

// Holder names CL.ALL's lease holder (HOLDER holder).
func Holder(holder string) Option {
	return func(c *settings) error {
		c.add("HOLDER", holder)
		return nil
	}
}

// Count is how many keys CL.TOP lists (COUNT n).
func Count(n int) Option { return number("COUNT", int64(n)) }

// detail asks CL.ALL for each limiter's answer (DETAIL): AllDetail sends it.
func detail() Option { return flag("DETAIL") }

// maxBlock is the longest hold the server takes: 2^62 ns, in whole milliseconds.
const maxBlock = time.Duration(1<<62) / time.Millisecond * time.Millisecond

// Block waits up to d (0: as long as it takes) for a denied call to fit (BLOCK timeout), on a
// connection held for it. The context's deadline shortens it: the server answers by then. A
// call whose context is cancelled while it waits takes nothing, but for CL.SMOOTH's, which
// keeps the reservation it made on starting to wait. Only the module waits.
func Block(d time.Duration) Option {
	return func(c *settings) error {
		if d < 0 || d > maxBlock {
			return fmt.Errorf("cell: BLOCK takes 0 to %v, not %v", maxBlock, d)
		}
		if _, err := millis("BLOCK", d); err != nil {
			return err
		}
		c.block = d
		return nil
	}
}

// millis is a duration in the milliseconds every call is sent in.
func millis(what string, d time.Duration) (string, error) {
	if d%time.Millisecond != 0 {
		return "", fmt.Errorf("cell: %s takes whole milliseconds, not %v", what, d)
	}
	return strconv.FormatInt(d.Milliseconds(), 10), nil
}

// settle adds up a call's options.
func settle(options []Option) (*settings, error) {
	c := &settings{quantity: 1, block: -1}
	for _, option := range options {
		if option == nil {
			continue
		}
		if err := option(c); err != nil {
			return nil, err
		}
	}
	return c, nil
}
