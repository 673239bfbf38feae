package container

import "testing"

// The paths are real cgroup paths: each comment names where it was
// captured (testdata/README.md lists the sources).
func TestParse(t *testing.T) {
	const (
		id1 = "4f797c539e6c745de61a93ca3ff892358ecbcaccd8414d5db545c38428142970"
		id2 = "9ec39b91f3d70e1beff50a308f77067065ea6be0d91a3378375056cd4422cf3d"
		id3 = "3726184226f5d3147c25fdeab5b60097e378e8a720503a5e19ecfdf29f869860"
		id4 = "3e74d3fd9db4c9dd921ae05c2502fb984d0cde1b36e581b13f79c639da4518a1"
		id5 = "2227daf62df6694645fee5df53c1f91271546a9560e8600a525690ae252b7f63"
		id6 = "38fac3e99302b3622be089dd41e7ccf38aff368a86cc339972075136ee2710ce"
		id7 = "3f05ee050f82c0145f1d88c94269c39dff0f07dbf8bba20aafd54b3a75dcaecc"
		id8 = "06dc5f321aad8726aa26559f16ec203bc099245bc44894b14a89fc02b022d1d5"
		id9 = "8e363eb2287da4ccc9f52ffc5de11252ac5fe707e3ddb917a3c0bdf9bb64165b"
		idA = "2b180104511194aab36fd295d3e217439f3ddb5bc88277f37b4952abee85c40e"
		idB = "286b15051ec43375190802e1f40562536980a8fd97e75bb89c7f2eec6f995f17"
		idC = "fd9d0ea06257a9780827cbc7fd92e3812a54fca26d63e191b73610d5d48b9cbd"
		idD = "24fce7291bc6d7f8a5965a5920740b0df25dda9bb4e84ffb889d8ea2927acec5"
		idE = "a09343ca97901516c25036e2b954421254f8c68b384b536064e8999f0c4ed18d"
		idF = "300a4e177913e2ae68c2811ead790b9e0889ada88bce328fc5d9b627a39f3d53"
	)
	for _, tc := range []struct {
		name, path string
		want       Ref
		ok         bool
	}{
		// Hosts.
		{"v2 service", "/system.slice/nginx.service", Ref{}, false},
		{"v2 session", "/user.slice/user-1000.slice/session-3.scope", Ref{}, false},
		{"root", "/", Ref{}, false},
		{"init", "/init.scope", Ref{}, false},
		{"user manager", "/user.slice/user-1000.slice/user@1000.service/init.scope", Ref{}, false},
		{"podman conmon", "/machine.slice/libpod-conmon-" + idD + ".scope", Ref{}, false},
		{"cri-o conmon", "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0b7632a2_a56e_4278_987a_22de18008dbe.slice/crio-conmon-" + id5 + ".scope", Ref{}, false},
		{"short hex is no id", "/docker/9f8e7d6c5b4a39281716151413121110ff", Ref{}, false},
		{"upper-case hex is no id", "/docker/" + "4F797C539E6C745DE61A93CA3FF892358ECBCACCD8414D5DB545C38428142970", Ref{}, false},
		{"lxc monitor", "/lxc.monitor.web1", Ref{}, false},
		{"podman pod slice", "/machine.slice/machine-libpod_pod_" + id9 + ".slice", Ref{}, false},
		// cgroupfs manager: a pod's directory under libpod_parent holds
		// its containers' (podman kube play without systemd).
		{"podman pod, cgroupfs", "/libpod_parent/" + id9 + "/libpod-" + id8, Ref{Runtime: Podman, ID: id8}, true},
		{"podman pod's own cgroup, cgroupfs", "/libpod_parent/" + id9, Ref{}, false},

		// docker.
		{"docker v1 cgroupfs (neuvector Debian)", "/docker/" + id3, Ref{Runtime: Docker, ID: id3}, true},
		{"docker v1 systemd (neuvector CentOS)", "/system.slice/docker-" + id2 + ".scope", Ref{Runtime: Docker, ID: id2}, true},
		{"docker v2 systemd (memwho fixture)", "/system.slice/docker-" + idF + ".scope", Ref{Runtime: Docker, ID: idF}, true},
		{"docker without .scope (kepler)", "/docker-" + idF, Ref{Runtime: Docker, ID: idF}, true},
		{"bare id at the top (neuvector, container's own view)", "/" + id1, Ref{Runtime: Unknown, ID: id1}, true},
		{"ECS (datadog tagging rfc)", "/ecs/haissam-ecs-classic/5a0d5ceddf6c44c1928d367a815d890f/" + id6, Ref{Runtime: Unknown, ID: id6}, true},
		{"docker in docker: the outer one", "/docker/" + id3 + "/docker/" + id1, Ref{Runtime: Docker, ID: id3}, true},

		// podman.
		{"podman root v2 (kepler)", "/machine.slice/libpod-" + id9 + ".scope", Ref{Runtime: Podman, ID: id9}, true},
		{"podman root v2 with container sub-cgroup (kepler)", "/machine.slice/libpod-" + id8 + ".scope/container", Ref{Runtime: Podman, ID: id8}, true},
		{"podman rootless (kepler)", "/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" + id7 + ".scope/container", Ref{Runtime: Podman, ID: id7, Owner: 1000}, true},
		{"podman quadlet payload (kepler)", "/system.slice/kepler.service/libpod-payload-" + id9, Ref{Runtime: Podman, ID: id9}, true},
		{"podman cgroupfs", "/libpod_parent/libpod-" + id9, Ref{Runtime: Podman, ID: id9}, true},
		{"podman pod member", "/machine.slice/machine-libpod_pod_" + id8 + ".slice/libpod-" + id9 + ".scope", Ref{Runtime: Podman, ID: id9}, true},
		{"docker rootless", "/user.slice/user-1001.slice/user@1001.service/docker-" + id2 + ".scope", Ref{Runtime: Docker, ID: id2, Owner: 1001}, true},

		// Kubernetes.
		{"k8s v1 cgroupfs (datadog tagging rfc)", "/kubepods/besteffort/pod3d274242-8ee0-11e9-a8a6-1e68d864ef1a/" + id4, Ref{Runtime: Unknown, ID: id4, PodUID: "3d274242-8ee0-11e9-a8a6-1e68d864ef1a"}, true},
		{"k8s cri-o systemd (datadog tagging rfc)", "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod90d81341_92de_11e7_8cf2_507b9d4141fa.slice/crio-" + id5 + ".scope", Ref{Runtime: CRIO, ID: id5, PodUID: "90d81341-92de-11e7-8cf2-507b9d4141fa"}, true},
		{"k8s cri-o v2 (kepler)", "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod2c9f8a79_5391_454b_88cb_86190881cb96.slice/crio-" + idE + ".scope", Ref{Runtime: CRIO, ID: idE, PodUID: "2c9f8a79-5391-454b-88cb-86190881cb96"}, true},
		{"k8s containerd guaranteed", "/kubepods.slice/kubepods-podd80f4a0e_576f_47a8_a0cf_69dc23dc1980.slice/cri-containerd-" + idA + ".scope", Ref{Runtime: Containerd, ID: idA, PodUID: "d80f4a0e-576f-47a8-a0cf-69dc23dc1980"}, true},
		{"kind node's containerd (kepler)", "/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-burstable.slice/kubelet-kubepods-burstable-pod3cae2e45_052c_4b11_80d3_4d7b2d2d3464.slice/cri-containerd-" + idA + ".scope", Ref{Runtime: Containerd, ID: idA, PodUID: "3cae2e45-052c-4b11-80d3-4d7b2d2d3464"}, true},
		{"kind seen from the host: the node container (kepler)", "/system.slice/docker-" + idC + ".scope/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/kubelet-kubepods-besteffort-podeab5a334_93fe_48a8_b139_9e8079c1f163.slice/cri-containerd-" + idA + ".scope", Ref{Runtime: Docker, ID: idC}, true},
		{"containerd without systemd cgroups (kepler)", "/system.slice/containerd.service/kubepods-burstable-poda3b200c9_db51_40b4_9d2d_53f8fdf80d7f.slice:cri-containerd:" + idB, Ref{Runtime: Containerd, ID: idB, PodUID: "a3b200c9-db51-40b4-9d2d-53f8fdf80d7f"}, true},
		{"kubelet-prefixed cgroupfs (kepler)", "/kubelet/kubepods/besteffort/podbdd4097d-6795-404e-9bd8-6a1383386198/" + id4, Ref{Runtime: Unknown, ID: id4, PodUID: "bdd4097d-6795-404e-9bd8-6a1383386198"}, true},

		// Machines and LXC.
		{"nspawn", "/machine.slice/systemd-nspawn@debian.service/payload/system.slice/cron.service", Ref{Runtime: Nspawn, ID: "debian"}, true},
		{"nspawn registered scope", `/machine.slice/machine-web\x2d1.scope/payload`, Ref{Runtime: Machine, ID: `web\x2d1`}, true},
		{"libvirt vm", `/machine.slice/machine-qemu\x2d1\x2dvm1.scope/libvirt/vcpu0`, Ref{Runtime: Machine, ID: `qemu\x2d1\x2dvm1`}, true},
		{"lxc 4 / lxd", "/lxc.payload.web1/system.slice/nginx.service", Ref{Runtime: LXC, ID: "web1"}, true},
		{"lxc v1", "/lxc/web1/init.scope", Ref{Runtime: LXC, ID: "web1"}, true},
		{"lxc 3", "/lxc.payload/web1", Ref{Runtime: LXC, ID: "web1"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Parse(tc.path)
			want := tc.want
			if want.Owner == 0 {
				want.Owner = -1
			}
			if !tc.ok {
				want = Ref{Owner: -1}
			}
			if ok != tc.ok || got != want {
				t.Errorf("Parse(%q) = %+v, %v; want %+v, %v", tc.path, got, ok, want, tc.ok)
			}
		})
	}
}

func TestShort(t *testing.T) {
	for _, tc := range []struct {
		ref  Ref
		want string
	}{
		{Ref{}, "host"},
		{Ref{Runtime: Docker, ID: "300a4e177913e2ae68c2811ead790b9e0889ada88bce328fc5d9b627a39f3d53"}, "300a4e177913"},
		{Ref{Runtime: Machine, ID: `qemu\x2d1\x2dvm1`}, "qemu-1-vm1"},
		{Ref{Runtime: Machine, ID: `a\x1bb\x2`}, `a\x1bb\x2`},
		{Ref{Runtime: LXC, ID: "web1"}, "web1"},
	} {
		if got := tc.ref.Short(); got != tc.want {
			t.Errorf("%+v.Short() = %q, want %q", tc.ref, got, tc.want)
		}
	}
}

// FuzzParse: no path makes Parse panic, and an id it returns is the one
// in the path.
func FuzzParse(f *testing.F) {
	f.Add("/system.slice/docker-300a4e177913e2ae68c2811ead790b9e0889ada88bce328fc5d9b627a39f3d53.scope")
	f.Add("/kubepods.slice/kubepods-pod_.slice:cri-containerd:")
	f.Add(`/machine.slice/machine-\x.scope`)
	f.Fuzz(func(t *testing.T, path string) {
		ref, ok := Parse(path)
		if !ok {
			return
		}
		if ref.ID == "" {
			t.Fatalf("Parse(%q) = %+v: empty id", path, ref)
		}
		_ = ref.Short()
	})
}
