package cli

import (
	"runtime/debug"
	"testing"
)

func TestDevelVersion(t *testing.T) {
	const rev = "3dce945c1a2b7f00d1e2c3b4a5968778695a4b3c"
	const when = "2026-11-23T10:04:05Z"
	for _, tc := range []struct {
		name     string
		settings []debug.BuildSetting
		want     string
	}{
		{"clean", []debug.BuildSetting{
			{Key: "vcs", Value: "git"},
			{Key: "vcs.revision", Value: rev},
			{Key: "vcs.time", Value: when},
			{Key: "vcs.modified", Value: "false"},
		}, "devel-3dce945c1a2b (2026-11-23)"},
		{"dirty", []debug.BuildSetting{
			{Key: "vcs.revision", Value: rev},
			{Key: "vcs.time", Value: when},
			{Key: "vcs.modified", Value: "true"},
		}, "devel-3dce945c1a2b+dirty (2026-11-23)"},
		{"no time", []debug.BuildSetting{
			{Key: "vcs.revision", Value: rev},
			{Key: "vcs.modified", Value: "true"},
		}, "devel-3dce945c1a2b+dirty"},
		{"short revision", []debug.BuildSetting{
			{Key: "vcs.revision", Value: "3dce945"},
			{Key: "vcs.time", Value: when},
		}, "devel-3dce945 (2026-11-23)"},
		{"no vcs stamp", []debug.BuildSetting{
			{Key: "-trimpath", Value: "true"},
			{Key: "CGO_ENABLED", Value: "0"},
		}, "(devel)"},
		{"nothing", nil, "(devel)"},
	} {
		if got := develVersion(tc.settings); got != tc.want {
			t.Errorf("%s: develVersion = %q, want %q", tc.name, got, tc.want)
		}
	}
}
