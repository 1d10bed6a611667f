package runner

import (
	"reflect"
	"testing"

	"github.com/spf13/pflag"
)

// TestFlagsDefaults: chaos run without flags runs DefaultSpec, so that a
// default changed in one place and not the other shows here.
func TestFlagsDefaults(t *testing.T) {
	var f Flags
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	f.Register(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	got, err := f.Spec()
	if err != nil {
		t.Fatal(err)
	}
	if got.Command = nil; !reflect.DeepEqual(got, DefaultSpec()) {
		t.Errorf("chaos run's defaults give\n%+v\nDefaultSpec is\n%+v", got, DefaultSpec())
	}
	if fs.Changed("min-insync-replicas") {
		t.Error("the default --min-insync-replicas 2 counts as given")
	}
}
