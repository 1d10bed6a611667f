package cli

import (
	"runtime/debug"
	"testing"
)

// TestVersionString: chaos --version says something useful however the
// binary was built: stamped by make build, installed with go install (a
// module version and no commit), or built with go build in a checkout (a
// pseudo-version that already names the commit).
func TestVersionString(t *testing.T) {
	vcs := func(rev string, modified bool) []debug.BuildSetting {
		m := "false"
		if modified {
			m = "true"
		}
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: m}}
	}
	const rev = "97a31b2654dfe732862a062c0399bdbd02d00d9e"
	for _, tc := range []struct {
		name  string
		stamp string
		bi    *debug.BuildInfo
		want  string
	}{
		{"make build", "v0.2.0-3-g97a31b2-dirty", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs(rev, true)}, "v0.2.0-3-g97a31b2-dirty"},
		{"make build, other commit recorded", "v0.2.0", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs(rev, false)}, "v0.2.0 (97a31b2654df)"},
		{"make build, no vcs info", "97a31b2", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "97a31b2"},
		{"go install @version", "dev", &debug.BuildInfo{Main: debug.Module{Version: "v0.3.1"}}, "v0.3.1"},
		{"go build in a checkout", "dev", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261129205842-97a31b2654df+dirty"}, Settings: vcs(rev, true)},
			"v0.0.0-20261129205842-97a31b2654df+dirty"},
		{"go build, vcs stamping off", "dev", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "dev"},
		{"go build, devel with a commit", "dev", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs(rev, true)}, "dev (97a31b2654df, modified)"},
		{"no build info", "dev", nil, "dev"},
	} {
		if got := VersionString(tc.stamp, tc.bi); got != tc.want {
			t.Errorf("%s: VersionString(%q) = %q, want %q", tc.name, tc.stamp, got, tc.want)
		}
	}
}
