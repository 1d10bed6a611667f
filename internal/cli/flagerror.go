package cli

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// Every command refuses a bad flag value in one style, naming the flag, the
// value and what it accepts:
//
//	--NAME: WHAT IS WRONG, got VALUE; WHAT IS ACCEPTED
//
// The checks run before a command starts anything; the library packages
// validate their configurations again, but their errors name fields, not
// flags.

// Error is a refused flag value in that style. got is left out when nil
// (a required flag that is missing), accepted when empty. It is a
// *FlagError, so that a caller that knows the setting by another name (a
// stored spec's JSON field) can say it in its own words (FlagError.Say).
func Error(name string, got any, problem, accepted string) error {
	return &FlagError{Name: name, Got: got, Problem: problem, Accepted: accepted}
}

// FlagError is a refused flag value: the flag's name (without --), the
// value, what is wrong with it and what the flag accepts.
type FlagError struct {
	Name     string
	Got      any
	Problem  string
	Accepted string
}

func (e *FlagError) Error() string { return e.Say("--" + e.Name) }

// Say is the refusal with the setting called name.
func (e *FlagError) Say(name string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", name, e.Problem)
	if e.Got != nil {
		b.WriteString(", got ")
		switch v := e.Got.(type) {
		case string:
			b.WriteString(strconv.Quote(v))
		case time.Duration:
			b.WriteString(v.String())
		default:
			fmt.Fprint(&b, v)
		}
	}
	if e.Accepted != "" {
		b.WriteString("; " + e.Accepted)
	}
	return b.String()
}

// ParseError rewrites an error of the flag parser of the command at
// cmdPath (cobra's CommandPath), whose flags are fs, into the same style:
// pflag's own name the flag but talk of strconv.ParseFloat. A misspelt
// flag gets the nearest of fs's names.
func ParseError(cmdPath string, fs *pflag.FlagSet, err error) error {
	var iv *pflag.InvalidValueError
	var ne *pflag.NotExistError
	var vr *pflag.ValueRequiredError
	switch {
	case errors.As(err, &iv):
		f := iv.GetFlag()
		what, accepted := "not a valid value", ""
		switch f.Value.Type() {
		case "int", "int8", "int16", "int32", "int64":
			what, accepted = "not a whole number", "e.g. --"+f.Name+" "+cmp.Or(f.DefValue, "1")
		case "uint", "uint8", "uint16", "uint32", "uint64":
			what, accepted = "not a whole number of 0 or more", "e.g. --"+f.Name+" 42"
		case "float32", "float64":
			what, accepted = "not a number", "e.g. --"+f.Name+" "+cmp.Or(f.DefValue, "1")
		case "duration":
			what, accepted = "not a duration", "a number with a unit, e.g. 30s, 500ms or 2m"
		case "bool":
			what, accepted = "not true or false", "--"+f.Name+" alone means true"
		case "stringToString":
			what, accepted = "not KEY=VALUE", "e.g. --"+f.Name+" 2=127.0.0.1:9093"
		}
		if errors.Is(err, strconv.ErrRange) {
			what = "out of range for a " + f.Value.Type()
		}
		return Error(f.Name, iv.GetValue(), what, accepted)
	case errors.As(err, &ne):
		name := "--" + ne.GetSpecifiedName()
		if len(ne.GetSpecifiedName()) == 1 || ne.GetSpecifiedShortnames() != "" {
			name = "-" + ne.GetSpecifiedName()
		}
		hint := ""
		if len(ne.GetSpecifiedName()) > 1 {
			hint = flagSuggestion(fs, ne.GetSpecifiedName())
		}
		return fmt.Errorf("%s: no such flag for %s%s; %s --help lists them", name, cmdPath, hint, cmdPath)
	case errors.As(err, &vr):
		return Error(vr.GetFlag().Name, nil, "needs a value", cmdPath+" --help says which")
	}
	return err
}

// HostPort checks an address flag: HOST:PORT with a port number.
func HostPort(name, v, example string) error {
	_, port, err := net.SplitHostPort(v)
	if err != nil {
		return Error(name, v, "not HOST:PORT", "e.g. --"+name+" "+example)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return Error(name, v, "not a port number (0-65535) after the colon", "e.g. --"+name+" "+example)
	}
	return nil
}
