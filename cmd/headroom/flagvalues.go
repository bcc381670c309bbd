package main

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
)

// Flags whose value has a format are pflag.Values that check it when the
// command line is parsed: bad input stops the command before it starts,
// with a one-line message that names the flag and the format, e.g.
//
//	invalid argument "1,x" for "--concurrency" flag: "x": want whole numbers of at least 1, comma-separated, e.g. 1,4,16
//
// (pflag adds the first part, the root command's flag error the hint to
// --help).

// parsedFlag is a flag read by a parser of the whole value (an SLO, a list
// of gate rules, a time zone). text is the value as given, shown as the
// default in --help.
type parsedFlag[T any] struct {
	dst   *T
	text  string
	typ   string
	parse func(string) (T, error)
}

func (f *parsedFlag[T]) Set(s string) error {
	v, err := f.parse(s)
	if err != nil {
		return err
	}
	*f.dst, f.text = v, s
	return nil
}

func (f *parsedFlag[T]) String() string { return f.text }
func (f *parsedFlag[T]) Type() string   { return f.typ }

// parsedVar defines a flag read by parse; dst keeps its value until the
// flag is given.
func parsedVar[T any](fl *pflag.FlagSet, dst *T, name, typ, text, usage string, parse func(string) (T, error)) {
	fl.Var(&parsedFlag[T]{dst: dst, text: text, typ: typ, parse: parse}, name, usage)
}

// listFlag is a comma-separated list whose every item is checked by item;
// want describes the format for the message. A second use of the flag
// replaces the list.
type listFlag[T any] struct {
	dst  *[]T
	typ  string
	want string
	item func(string) (T, error)
}

func (f *listFlag[T]) Set(s string) error {
	items, err := splitList(s, f.want, f.item)
	if err != nil {
		return err
	}
	*f.dst = items
	return nil
}

func (f *listFlag[T]) String() string {
	parts := make([]string, len(*f.dst))
	for i, v := range *f.dst {
		parts[i] = fmt.Sprint(v)
	}
	return strings.Join(parts, ",")
}

func (f *listFlag[T]) Type() string { return f.typ }

// splitList reads a comma-separated list: blanks around items are
// dropped, an empty list is an error.
func splitList[T any](s, want string, item func(string) (T, error)) ([]T, error) {
	var out []T
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		v, err := item(p)
		if err != nil {
			return nil, fmt.Errorf("%q: want %s", p, want)
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("empty: want %s", want)
	}
	return out, nil
}

// intsVar defines a list of whole numbers of at least least.
func intsVar(fl *pflag.FlagSet, dst *[]int, name string, least int, example string, def []int, usage string) {
	*dst = slices.Clone(def)
	want := fmt.Sprintf("whole numbers of at least %d, comma-separated, e.g. %s", least, example)
	fl.Var(&listFlag[int]{dst: dst, typ: "ints", want: want, item: func(s string) (int, error) {
		n, err := strconv.Atoi(s)
		if err != nil || n < least {
			return 0, errors.New("out of range")
		}
		return n, nil
	}}, name, usage)
}

// positivesVar defines a list of positive, finite numbers.
func positivesVar(fl *pflag.FlagSet, dst *[]float64, name, example, usage string) {
	want := "positive numbers, comma-separated, e.g. " + example
	fl.Var(&listFlag[float64]{dst: dst, typ: "numbers", want: want, item: func(s string) (float64, error) {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || !(v > 0) || math.IsInf(v, 0) {
			return 0, errors.New("out of range")
		}
		return v, nil
	}}, name, usage)
}

// choiceVar defines a flag that takes one of choices.
func choiceVar(fl *pflag.FlagSet, dst *string, name, def string, choices []string, usage string) {
	*dst = def
	parsedVar(fl, dst, name, "string", def, usage, func(s string) (string, error) {
		if !slices.Contains(choices, s) {
			return "", fmt.Errorf("want %s", orList(choices))
		}
		return s, nil
	})
}

// orList joins choices as "a, b or c".
func orList(choices []string) string {
	if len(choices) < 2 {
		return strings.Join(choices, "")
	}
	return strings.Join(choices[:len(choices)-1], ", ") + " or " + choices[len(choices)-1]
}

// pairsFlag is a repeatable KEY=VALUE flag (compare --label RUN=NAME);
// each use adds one pair, checked when given.
type pairsFlag struct {
	dst  *[][2]string
	want string
}

func (f *pairsFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" || v == "" {
		return fmt.Errorf("want %s", f.want)
	}
	*f.dst = append(*f.dst, [2]string{k, v})
	return nil
}

func (f *pairsFlag) String() string {
	parts := make([]string, len(*f.dst))
	for i, p := range *f.dst {
		parts[i] = p[0] + "=" + p[1]
	}
	return strings.Join(parts, ",")
}

func (f *pairsFlag) Type() string { return "pair" }
