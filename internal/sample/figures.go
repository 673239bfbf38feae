package sample

import "github.com/memwho/memwho/internal/proc"

// This file holds the figure rules a scan applies, exported for the
// sampler (internal/engine), so that every command gives a process the
// same figures.

// ExactFigures fills p's figures from smaps_rollup (or summed smaps), as
// a report does. Hugetlb pages are not in Pss, so private huge pages are
// added to RAM and Private; shared huge pages cannot be divided among
// their users and are left out (the --system footer shows the host's huge
// page pools).
func ExactFigures(p *Process, ru *proc.Rollup) {
	p.Accuracy, p.Cause = Exact, CauseNone
	p.RAM = ru.Pss + ru.PrivateHugetlb
	p.Private = ru.PrivateClean + ru.PrivateDirty + ru.PrivateHugetlb
	// Private pages are counted in full in Pss, so Private <= RAM; the
	// guard keeps a kernel oddity from wrapping the unsigned subtraction.
	if p.Private > p.RAM {
		p.Private = p.RAM
	}
	p.Shared = p.RAM - p.Private
	p.PssAnon, p.PssFile, p.PssShmem = ru.PssAnon, ru.PssFile, ru.PssShmem
	p.PrivateHugetlb = ru.PrivateHugetlb
	if ru.HasSwapPss {
		p.Swap = ru.SwapPss
	} else {
		p.Swap = ru.Swap
		p.SwapPssMissing = true
	}
	p.Bound, p.SwapBound = 0, 0
	if ru.Bound > 0 || ru.SwapBound > 0 {
		// Read page by page without every page's share: the figures
		// are estimates, within the bounds.
		p.Accuracy, p.Cause = Estimate, CausePaced
		p.Bound, p.SwapBound = ru.Bound, ru.SwapBound
	}
}

// EstimateFigures fills p's figures from status, as a report does when
// the page-table walk is refused or --fast is given. RSS counts every
// shared page in full, so sums over processes overstate Shared and RAM.
func EstimateFigures(p *Process, ss *proc.Status) {
	// The cause (a refused or malformed walk) is the sampler's to set.
	p.Accuracy, p.Cause = Estimate, CauseNone
	p.Bound, p.SwapBound = 0, 0
	p.RAM = ss.VmRSS
	p.Private = ss.RssAnon
	p.Shared = ss.RssFile + ss.RssShmem
	p.PssAnon, p.PssFile, p.PssShmem = ss.RssAnon, ss.RssFile, ss.RssShmem
	p.PrivateHugetlb = 0
	if p.Private+p.Shared != p.RAM {
		// Kernels before 4.5 have no RssAnon/RssFile/RssShmem split.
		if p.Private > p.RAM {
			p.Private = p.RAM
		}
		p.Shared = p.RAM - p.Private
	}
	p.Swap = ss.VmSwap
}

// Refused marks p's figures as estimates because its walk was refused or
// malformed (cause CauseDenied or CauseMalformed). A paced read's bounds
// do not survive it: they bounded figures the refusal replaced, and a
// snapshot holding a bound beside another cause is malformed.
func Refused(p *Process, cause Cause) {
	p.Accuracy, p.Cause = Estimate, cause
	p.Bound, p.SwapBound = 0, 0
}
