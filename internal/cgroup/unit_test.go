package cgroup

import "testing"

func TestUnitAndSlice(t *testing.T) {
	const id = "300a4e177913e2ae68c2811ead790b9e0889ada88bce328fc5d9b627a39f3d53"
	for _, tc := range []struct{ path, unit, slice string }{
		{"/", RootSlice, RootSlice},
		{"", RootSlice, RootSlice},
		{"/init.scope", "init.scope", RootSlice},
		{"/system.slice/nginx.service", "nginx.service", "system.slice"},
		{"/system.slice", "system.slice", "system.slice"},
		{"/system.slice/docker-" + id + ".scope", "docker-" + id + ".scope", "system.slice"},
		{"/user.slice/user-1000.slice/session-3.scope", "session-3.scope", "user-1000.slice"},
		{"/user.slice/user-1000.slice/user@1000.service/init.scope", "user@1000.service/init.scope", "user-1000.slice"},
		{"/user.slice/user-1000.slice/user@1000.service/app.slice/app-firefox-1234.scope", "user@1000.service/app-firefox-1234.scope", "user-1000.slice"},
		{"/user.slice/user-1000.slice/user@1000.service", "user@1000.service", "user-1000.slice"},
		// Delegated sub-cgroups are not units.
		{"/machine.slice/libpod-" + id + ".scope/container", "libpod-" + id + ".scope", "machine.slice"},
		{"/system.slice/kepler.service/libpod-payload-" + id, "kepler.service", "system.slice"},
		// Units inside a container's own systemd belong to the
		// container's unit on the host.
		{"/machine.slice/systemd-nspawn@debian.service/payload/system.slice/cron.service", "systemd-nspawn@debian.service", "machine.slice"},
		{"/machine.slice/libpod-" + id + ".scope/container/system.slice/cron.service", "libpod-" + id + ".scope", "machine.slice"},
		// LXC is outside systemd's tree: its path, with the
		// container's own units.
		{"/lxc.payload.web1/system.slice/nginx.service", "/lxc.payload.web1/system.slice/nginx.service", "/lxc.payload.web1/system.slice/nginx.service"},
		{"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod90d81341_92de_11e7_8cf2_507b9d4141fa.slice/crio-" + id + ".scope", "crio-" + id + ".scope", "kubepods-burstable-pod90d81341_92de_11e7_8cf2_507b9d4141fa.slice"},
		// v1 cgroups systemd does not manage: the path itself.
		{"/docker/" + id, "/docker/" + id, "/docker/" + id},
		{"/kubepods/besteffort/pod3d274242-8ee0-11e9-a8a6-1e68d864ef1a/" + id, "/kubepods/besteffort/pod3d274242-8ee0-11e9-a8a6-1e68d864ef1a/" + id, "/kubepods/besteffort/pod3d274242-8ee0-11e9-a8a6-1e68d864ef1a/" + id},
		{"/lxc/web1", "/lxc/web1", "/lxc/web1"},
		{"/.service", "/.service", "/.service"},
	} {
		if got := Unit(tc.path); got != tc.unit {
			t.Errorf("Unit(%q) = %q, want %q", tc.path, got, tc.unit)
		}
		if got := Slice(tc.path); got != tc.slice {
			t.Errorf("Slice(%q) = %q, want %q", tc.path, got, tc.slice)
		}
	}
}
