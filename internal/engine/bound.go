package engine

import "github.com/memwho/memwho/internal/proc"

// risk is what a figure read from smaps_rollup at its walk W can become
// while the process's own pages stay as they were (its statm unmoved),
// in bytes. See "Error bound" in the package documentation for the
// model; the proofs are here, next to the arithmetic.
//
// A page of size s mapped by N processes counts s/N in each one's Pss.
// With its own pages unchanged, a process's figure moves only because
// other processes map or unmap pages it maps, which changes their N:
//
//   - a private anonymous page stays at N = 1 (only a fork or a KSM
//     merge shares it; a fork re-walks the parent);
//   - any other page counts between 0 (excluded) and s.
//
// So RAM = Pss + Private_Hugetlb moves within
//
//	PrivateAnon(W) <= Pss(now) <= Rss(W)
//	0 <= hugetlb part(now) <= Private_Hugetlb(W) + Shared_Hugetlb(W)
//
// (Shared_Hugetlb counts 0 in RAM and can become private; a
// Private_Hugetlb page can become shared and count 0), which gives the
// two one-sided bounds on e = RAM(now) - RAM(W):
//
//	e <= up   = Rss - Pss + Shared_Hugetlb
//	e >= -down, down = Pss - PrivateAnon + Private_Hugetlb
//
// and |e| <= max(up, down): the per-process Detail.Bound. The previous
// bound, Rss - PrivateAnon, is up + down: the error has one sign, so the
// sum of both sides was never needed.
type risk struct {
	up, down uint64
	// unmapped is the part of up that /proc/meminfo's Mapped does not
	// count: anonymous pages shared copy-on-write and huge pages (see
	// sumBound).
	unmapped uint64
}

// riskOf computes the risk of the figures of ru. smaps_rollup has no
// PrivateAnon line; a lower estimate keeps down and unmapped, which it
// enlarges, true bounds. Two hold, the larger is taken:
//
//   - Anonymous - (Shared_Clean + Shared_Dirty): the shared anonymous
//     pages are among the shared ones;
//   - 2*Pss_Anon - Anonymous (kernel 5.8+): a shared anonymous page
//     counts at most half its size in Pss_Anon, so
//     Pss_Anon <= PrivateAnon + (Anonymous - PrivateAnon)/2. It is exact
//     when no anonymous page is shared, the common case, where the first
//     estimate loses every shared file page.
func riskOf(ru *proc.Rollup) risk {
	shared := ru.SharedClean + ru.SharedDirty
	privAnon := ru.Anonymous - min(shared, ru.Anonymous)
	if 2*ru.PssAnon > ru.Anonymous {
		privAnon = max(privAnon, 2*ru.PssAnon-ru.Anonymous)
	}
	privAnon = min(privAnon, ru.Anonymous, ru.Rss)
	pss := min(ru.Pss, ru.Rss)
	return risk{
		up:       ru.Rss - pss + ru.SharedHugetlb,
		down:     pss - min(privAnon, pss) + ru.PrivateHugetlb,
		unmapped: ru.Anonymous - privAnon + ru.SharedHugetlb,
	}
}

// bound is the most the figure can be off by: max(up, down).
func (r risk) bound() uint64 { return max(r.up, r.down) }

// sumBound bounds the error of the sum of the stale figures (RAM), which
// is what a host or group total shows, tighter than the sum of their
// bounds. Summing per process counts a page shared by N processes N
// times; its true effect on the sum is at most its size once.
//
// Proof. Write the error of the sum as a sum over pages p, e_p = (the
// stale processes' share of p now) - (their share of p in their
// figures). A share is never negative, so e_p >= -(share in the
// figures), and those shares add up to at most sum(down): the sum's
// error is >= -sum(down). Their share now is at most the page's size
// s_p, and e_p <= the sum over the stale mappers of their own
// up-contribution, so e_p <= min(s_p, up_p) where up_p is that sum.
// Only a page that can gain is counted: a shared page. Summing,
// sum(e_p) <= min(sum(up), D) where D is the size of the distinct such
// pages the stale processes map. With their pages unchanged they still
// map them now: file and shmem pages are then counted once each in
// /proc/meminfo's Mapped (read now), anonymous shared and huge pages at
// most in sum(unmapped). So
//
//	-sum(down) <= error of the sum <= min(sum(up), mapped + sum(unmapped))
//
// and its magnitude is at most the larger side. mapped < 0 means
// Mapped is unknown (meminfo not read): only sum(up) caps the upper side.
func sumBound(up, down, unmapped uint64, mapped int64) uint64 {
	hi := up
	if mapped >= 0 {
		hi = min(hi, uint64(mapped)+unmapped)
	}
	return max(hi, down)
}
