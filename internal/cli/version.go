package cli

import (
	"runtime/debug"
	"strings"
)

// Version is what chaos --version prints for a binary stamped with stamp
// ("dev" when it was not): see VersionString.
func Version(stamp string) string {
	bi, _ := debug.ReadBuildInfo()
	return VersionString(stamp, bi)
}

// VersionString is the stamped version, or, for a binary built without one
// (go install, go build), the module version the Go toolchain recorded
// ("v1.2.0" for a release installed with go install ...@version, a
// pseudo-version for a commit), followed by the commit when the toolchain
// recorded one that the version does not already name.
func VersionString(stamp string, bi *debug.BuildInfo) string {
	v := stamp
	var rev string
	modified := false
	if bi != nil {
		if stamp == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	if len(rev) >= 12 && !strings.Contains(v, rev[:7]) {
		v += " (" + rev[:12]
		if modified && !strings.Contains(v, "dirty") {
			v += ", modified"
		}
		v += ")"
	}
	return v
}
