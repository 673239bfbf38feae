package agent

// The eleventh adversarial review (docs/safe.md): attacks on the rule
// that lets a newcomer close a served connection of the source holding
// the most slots (hogsConn), over real connections.

import (
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"
)

// r11Slow is a handler whose /slow requests stay served until release
// is closed or their connection goes, counting those begun on started.
func r11Slow(release chan struct{}, started *sync.WaitGroup) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			started.Done()
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
		io.WriteString(w, "figures\n")
	})
}

// r11Hold starts n /slow requests from ip and waits until they are all
// served; their errors arrive on the channel returned.
func r11Hold(t *testing.T, addr, ip string, n int, started *sync.WaitGroup) <-chan error {
	t.Helper()
	client := fromIP(ip)
	errs := make(chan error, n)
	for range n {
		go func() {
			resp, err := client.Get("http://" + addr + "/slow")
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			errs <- err
		}()
	}
	started.Wait()
	return errs
}

// r11Dial opens a TCP connection from ip to addr, closed at the test's end.
func r11Dial(t *testing.T, ip, addr string) net.Conn {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestReview11HogQueuesAhead: the hog holds every slot with served
// requests, then opens one connection more. No room can be made for it
// (it is the hog), and Accept waited for a slot with it, so a scrape
// from another address, queued behind it in the kernel's backlog, was
// never even accepted: the rule never ran for it, and one connection
// more than the limit was enough to lock every other source out until
// the write timeout. It is closed at once now (blocksOthers).
func TestReview11HogQueuesAhead(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	var started sync.WaitGroup
	started.Add(4)
	addr, _ := listenLimited(t, Listeners{MaxConns: 4}, r11Slow(release, &started))
	hogs := r11Hold(t, addr, "127.0.0.1", 4, &started)
	extra := r11Dial(t, "127.0.0.1", addr)
	io.WriteString(extra, "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
	if !closedByServer(extra) {
		t.Error("the hog's connection beyond the limit was kept waiting")
	}
	select {
	case err := <-hogs:
		t.Fatalf("a hog's request ended (%v) for its own newcomer", err)
	default:
	}
	scrape := fromIP("127.0.0.2")
	scrape.Timeout = 3 * time.Second
	resp, err := scrape.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("a scrape from another address behind the hog's extra connection: %v", err)
	}
	resp.Body.Close()
	select {
	case err := <-hogs:
		if err == nil {
			t.Error("a hog's request ended without error")
		}
	case <-time.After(5 * time.Second):
		t.Error("none of the hog's served connections was closed")
	}
}
