// Command promlint checks Prometheus text exposition with client_golang's promlint, and parses
// PromQL expressions with Prometheus' own parser. Any problem is printed and the exit status is 1.
//
//	promlint metrics FILE...   lint each file; prints "FILE: metric: problem" per problem
//	promlint exprs FILE        parse each non-empty line; prints one JSON line per expression:
//	                           {"line":N,"selectors":[{"name":…,"matchers":[{"label","op","value"}]}]}
//	                           or {"line":N,"error":…}
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: promlint metrics FILE... | promlint exprs FILE")
		os.Exit(2)
	}
	var failed bool
	switch os.Args[1] {
	case "metrics":
		for _, file := range os.Args[2:] {
			failed = lintFile(file) || failed
		}
	case "exprs":
		failed = parseExprs(os.Args[2])
	default:
		fmt.Fprintf(os.Stderr, "unknown mode %q\n", os.Args[1])
		os.Exit(2)
	}
	if failed {
		os.Exit(1)
	}
}

func lintFile(file string) bool {
	f, err := os.Open(file)
	if err != nil {
		fmt.Printf("%s: %v\n", file, err)
		return true
	}
	defer f.Close()
	problems, err := promlint.New(f).Lint()
	if err != nil {
		fmt.Printf("%s: %v\n", file, err)
		return true
	}
	for _, p := range problems {
		fmt.Printf("%s: %s: %s\n", file, p.Metric, p.Text)
	}
	return len(problems) > 0
}

// parseExprs prints one JSON line per non-empty input line: the vector selectors of that
// expression, each with its metric name and label matchers, or the parser's error.
func parseExprs(file string) bool {
	f, err := os.Open(file)
	if err != nil {
		fmt.Printf("%v\n", err)
		return true
	}
	defer f.Close()
	failed := false
	out := json.NewEncoder(os.Stdout)
	scanner := bufio.NewScanner(f)
	scanner.Buffer(make([]byte, 1<<20), 1<<20)
	promql := parser.NewParser(parser.Options{})
	for line := 1; scanner.Scan(); line++ {
		text := strings.TrimSpace(scanner.Text())
		if text == "" {
			continue
		}
		result := parsed{Line: line, Selectors: []selector{}}
		if expr, err := promql.ParseExpr(text); err != nil {
			result.Error = err.Error()
			failed = true
		} else {
			result.Selectors = selectorsOf(expr)
		}
		if err := out.Encode(result); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
	return failed
}

type matcher struct {
	Label string `json:"label"`
	Op    string `json:"op"`
	Value string `json:"value"`
}

type selector struct {
	Name     string    `json:"name"`
	Matchers []matcher `json:"matchers"`
}

type parsed struct {
	Line      int        `json:"line"`
	Error     string     `json:"error,omitempty"`
	Selectors []selector `json:"selectors"`
}

func selectorsOf(expr parser.Expr) []selector {
	selectors := []selector{}
	for _, matchers := range parser.ExtractSelectors(expr) {
		s := selector{Matchers: []matcher{}}
		for _, m := range matchers {
			if m.Name == labels.MetricName && m.Type == labels.MatchEqual {
				s.Name = m.Value
				continue
			}
			s.Matchers = append(s.Matchers, matcher{Label: m.Name, Op: m.Type.String(), Value: m.Value})
		}
		selectors = append(selectors, s)
	}
	return selectors
}
