package cell

import "time"

// Reply is a limiter's answer, [limited, limit, remaining, retry_after, reset_after], and with
// AtMost the units granted.
type Reply struct {
	Limited   bool
	Limit     int64
	Remaining int64
	// RetryAfter is how long until the call would fit, rounded up to the millisecond as the
	// server rounds it; negative when it was admitted, or when no wait would admit it.
	RetryAfter time.Duration
	// ResetAfter is how long until the limiter is back to full.
	ResetAfter time.Duration
	// Granted is the units taken, with AtMost; 0 without it.
	Granted int64
}

// Allowed reports whether the call was admitted.
func (r Reply) Allowed() bool {
	return !r.Limited
}

// LeaseHolder is one lease's holder and the time its lease has left.
type LeaseHolder struct {
	Holder string
	Left   time.Duration
}

// Denied is one of the keys a node denied most (CL.TOP): its denied calls over this minute and
// the one before, at least the truth, and the most by which that may exceed it.
type Denied struct {
	Key    string
	Denied int64
	Error  int64
}

func replyOf(name string, reply any) (Reply, error) {
	values, ok := reply.([]any)
	if !ok || len(values) < 5 || len(values) > 6 {
		return Reply{}, &ReplyError{name, reply}
	}
	var numbers [6]int64
	for at, value := range values {
		n, ok := value.(int64)
		if !ok {
			return Reply{}, &ReplyError{name, reply}
		}
		numbers[at] = n
	}
	return Reply{
		Limited:    numbers[0] != 0,
		Limit:      numbers[1],
		Remaining:  numbers[2],
		RetryAfter: wait(numbers[3]),
		ResetAfter: wait(numbers[4]),
		Granted:    numbers[5],
	}, nil
}

// wait is a reply's milliseconds as a duration; -1 stays -1, as redis_rate has it.
func wait(ms int64) time.Duration {
	if ms < 0 {
		return -1
	}
	if ms > int64(time.Duration(1<<63-1)/time.Millisecond) {
		return time.Duration(1<<63 - 1)
	}
	return time.Duration(ms) * time.Millisecond
}

func integer(name string, reply any) (int64, error) {
	if n, ok := reply.(int64); ok {
		return n, nil
	}
	return 0, &ReplyError{name, reply}
}

func list(name string, reply any) ([]any, error) {
	if items, ok := reply.([]any); ok {
		return items, nil
	}
	return nil, &ReplyError{name, reply}
}

func text(name string, reply any) (string, error) {
	switch s := reply.(type) {
	case string:
		return s, nil
	case []byte:
		return string(s), nil
	}
	return "", &ReplyError{name, reply}
}
