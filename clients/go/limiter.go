package cell

import (
	"strconv"
	"time"
)

// Calendar is a calendar's unit, in CL.FIXED's period's place: windows from the start of each.
type Calendar string

const (
	Day   Calendar = "DAY"
	Week  Calendar = "WEEK"
	Month Calendar = "MONTH"
	Year  Calendar = "YEAR"
)

// Limiter is one of a CL.ALL call's limiters: Throttle, Fixed, Window or Lease.
type Limiter interface {
	key() string
	// words are the limiter's words after the keys: its keyword and its numbers.
	words() ([]string, error)
}

// Throttle is GCRA: Count per Period, in bursts of MaxBurst + 1.
type Throttle struct {
	Key             string
	MaxBurst, Count int64
	Period          time.Duration
}

// Fixed is at most Limit per fixed window of Period, or of a Calendar unit when one is named;
// laid on the clock with Align; in a local time Offset minutes ahead of UTC when not 0.
type Fixed struct {
	Key      string
	Limit    int64
	Period   time.Duration
	Calendar Calendar
	Align    bool
	Offset   int
}

// Window is at most Limit in any Period; in Buckets cells when not 0.
type Window struct {
	Key     string
	Limit   int64
	Period  time.Duration
	Buckets int64
}

// Lease is at most Limit holders at once, each lease LeaseTime long.
type Lease struct {
	Key       string
	Limit     int64
	LeaseTime time.Duration
}

func (l Throttle) key() string { return l.Key }
func (l Fixed) key() string    { return l.Key }
func (l Window) key() string   { return l.Key }
func (l Lease) key() string    { return l.Key }

func (l Throttle) words() ([]string, error) {
	period, err := millis("period", l.Period)
	return []string{"THROTTLE", itoa(l.MaxBurst), itoa(l.Count), period}, err
}

func (l Fixed) words() ([]string, error) {
	period, err := fixedPeriod(l.Period, l.Calendar)
	words := []string{"FIXED", itoa(l.Limit), period}
	if l.Align {
		words = append(words, "ALIGN")
	}
	if l.Offset != 0 {
		words = append(words, "OFFSET", strconv.Itoa(l.Offset))
	}
	return words, err
}

func (l Window) words() ([]string, error) {
	period, err := millis("period", l.Period)
	words := []string{"WINDOW", itoa(l.Limit), period}
	if l.Buckets != 0 {
		words = append(words, "BUCKETS", itoa(l.Buckets))
	}
	return words, err
}

func (l Lease) words() ([]string, error) {
	leaseTime, err := millis("lease_time", l.LeaseTime)
	return []string{"LEASE", itoa(l.Limit), leaseTime}, err
}

// fixedPeriod is CL.FIXED's period: a calendar's word, or milliseconds.
func fixedPeriod(period time.Duration, unit Calendar) (string, error) {
	if unit != "" {
		return string(unit), nil
	}
	return millis("period", period)
}

func itoa(n int64) string {
	return strconv.FormatInt(n, 10)
}
