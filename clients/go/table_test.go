package cell

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// The route table and the options, held to their one home: clients/protocol.json and
// clients/grammar.json (printed from the module's command table).

type protocol struct {
	Commands map[string]struct {
		Call string `json:"call"`
		Keys string `json:"keys"`
	} `json:"commands"`
}

type grammar struct {
	Commands []string            `json:"commands"`
	Params   map[string][]string `json:"params"`
	Options  []struct {
		Keyword         string   `json:"keyword"`
		Takers          []string `json:"takers"`
		Positional      []string `json:"positional"`
		ReplicationOnly bool     `json:"replication_only"`
	} `json:"options"`
}

func read(t *testing.T, name string, into any) {
	source, err := os.ReadFile(filepath.Join("..", name))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(source, into); err != nil {
		t.Fatal(err)
	}
}

func names(cmds []command) []string {
	var all []string
	for _, c := range cmds {
		all = append(all, c.name)
	}
	sort.Strings(all)
	return all
}

func TestRouteTableIsTheProtocols(t *testing.T) {
	var p protocol
	read(t, "protocol.json", &p)
	var want []string
	for name := range p.Commands {
		want = append(want, name)
	}
	sort.Strings(want)
	if got := names(commands); !slices.Equal(got, want) {
		t.Fatalf("the route table's commands: %v; protocol.json's: %v", got, want)
	}
	for _, c := range commands {
		row := p.Commands[c.name]
		if string(c.call) != row.Call || string(c.keys) != row.Keys {
			t.Errorf("%s: routed %s/%s, protocol.json says %s/%s", c.name, c.call, c.keys, row.Call, row.Keys)
		}
	}
}

func TestRouteTableIsTheGrammars(t *testing.T) {
	var g grammar
	read(t, "grammar.json", &g)
	want := slices.Clone(g.Commands)
	sort.Strings(want)
	if got := names(commands); !slices.Equal(got, want) {
		t.Fatalf("the route table's commands: %v; grammar.json's: %v", got, want)
	}
	for _, option := range g.Options {
		for _, c := range commands {
			switch option.Keyword {
			case "QUANTITY":
				place := noQuantity
				if slices.Contains(option.Positional, c.name) {
					place = positional
				} else if slices.Contains(option.Takers, c.name) {
					place = keyword
				}
				if c.quantity != place {
					t.Errorf("%s's quantity: %v, the grammar's %v", c.name, c.quantity, place)
				}
			case "MS":
				if c.ms != slices.Contains(option.Takers, c.name) {
					t.Errorf("%s sends MS: %v; the grammar says it takes it: %v", c.name, c.ms, !c.ms)
				}
			}
		}
	}
}

// options is every option the client offers, by its keyword, each given a value.
var options = map[string]Option{
	"QUANTITY":    Quantity(2),
	"BUCKETS":     Buckets(3),
	"BURST":       Burst(time.Second),
	"WARMUP":      Warmup(time.Second),
	"COLD":        Cold(3),
	"REFUND":      Refund(),
	"DRYRUN":      DryRun(),
	"COUNTDENIED": CountDenied(),
	"ALIGN":       Align(),
	"OFFSET":      Offset(60),
	"BAN":         Ban(time.Second),
	"DETAIL":      detail(),
	"HOLDER":      Holder("h"),
	"ATMOST":      AtMost(),
	"COUNT":       Count(5),
	"BLOCK":       Block(time.Second),
}

// unoffered are the grammar's options the client has no function for, and why.
var unoffered = map[string]string{
	"MS": "every call sends it",
}

func TestOptionsAreTheGrammars(t *testing.T) {
	var g grammar
	read(t, "grammar.json", &g)
	var want []string
	for _, option := range g.Options {
		if option.ReplicationOnly {
			continue
		}
		if _, ok := unoffered[option.Keyword]; !ok {
			want = append(want, option.Keyword)
		}
	}
	var got []string
	for keyword := range options {
		got = append(got, keyword)
	}
	sort.Strings(want)
	sort.Strings(got)
	if !slices.Equal(got, want) {
		t.Fatalf("the client's options: %v; the grammar's: %v", got, want)
	}
	for keyword, option := range options {
		settings, err := settle([]Option{option})
		if err != nil {
			t.Fatal(keyword, err)
		}
		switch keyword {
		case "QUANTITY":
			if settings.quantity != 2 {
				t.Errorf("QUANTITY: %d", settings.quantity)
			}
		case "BLOCK":
			if settings.block != time.Second {
				t.Errorf("BLOCK: %v", settings.block)
			}
		default:
			if len(settings.words) == 0 || settings.words[0] != keyword {
				t.Errorf("%s sends %v", keyword, settings.words)
			}
		}
	}
}

func TestDurationsAreWholeMilliseconds(t *testing.T) {
	if _, err := settle([]Option{Ban(1500 * time.Microsecond)}); err == nil || !strings.Contains(err.Error(), "whole milliseconds") {
		t.Fatalf("a span of no whole milliseconds: %v", err)
	}
	if _, err := settle([]Option{Block(maxBlock + time.Millisecond)}); err == nil {
		t.Fatal("a hold past 2^62 ns: no error")
	}
	settings, err := settle([]Option{Burst(90 * time.Second)})
	if err != nil || !slices.Equal(settings.words, []string{"BURST", "90000"}) {
		t.Fatalf("BURST 90 s: %v %v", settings.words, err)
	}
}

func TestRequestsOnEachRoute(t *testing.T) {
	req, err := request(Library, cmdAll, []string{"2", "a", "b", "WINDOW", "1", "1000"})
	if err != nil || strings.Join(req.Words, " ") != "FCALL cl_all 2 a b WINDOW 1 1000" || req.FirstKey != 3 || req.Keys != 2 {
		t.Fatalf("CL.ALL on the library: %+v %v", req, err)
	}
	req, err = request(Module, cmdThrottle, []string{"k", "1", "2", "3"})
	if err != nil || strings.Join(req.KeyNames(), " ") != "k" || req.Held() {
		t.Fatalf("CL.THROTTLE on the module: %+v %v", req, err)
	}
	if _, err := request(Library, cmdTop, nil); err == nil {
		t.Fatal("CL.TOP on the library: no error")
	}
	if _, err := request(Module, cmdAll, []string{"3", "a"}); err == nil {
		t.Fatal("CL.ALL naming more keys than it has: no error")
	}
	if _, err := request(Module, cmdAll, nil); err == nil {
		t.Fatal("CL.ALL with no count: no error")
	}
}
