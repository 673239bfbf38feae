package main

import "testing"

// TestBuildVersionLdflags: a version set at link time wins over the stamp.
func TestBuildVersionLdflags(t *testing.T) {
	saved := version
	defer func() { version = saved }()
	version = "v1.2.3-4-g3dce945-dirty"
	if got := buildVersion(); got != version {
		t.Errorf("buildVersion = %q, want %q", got, version)
	}
}
