package agent

import (
	"net"
	"strconv"
	"testing"
	"time"
)

// fuzzPeer makes a peer from two bytes, in a small space so that peers
// share groups often: IPv4 in 10.0–3.0–7.0–7, loopback 127.0.0.0–7, IPv6
// in four /32s with two /48s, /56s and /64s each and four addresses, or
// one of three users.
func fuzzPeer(a, b byte) peer {
	switch a % 4 {
	case 0:
		return ipPeer(net.IPv4(10, b>>6&3, b>>3&7, b&7))
	case 1:
		return ipPeer(net.IPv4(127, 0, 0, b&7))
	case 2:
		ip := net.ParseIP("2001:db8::")
		ip[3] += b >> 6 & 3
		ip[5] = b >> 5 & 1
		ip[6] = b >> 4 & 1
		ip[7] = b >> 3 & 1
		ip[15] = b & 3
		return ipPeer(ip)
	default:
		return newPeer("uid " + strconv.Itoa(int(b%3)))
	}
}

// FuzzHogRule: the rule on held connections made from the input (two
// bytes a peer: the newcomer, then up to 64 served connections, oldest
// first) cuts what hogsConnReference, the rule written plainly, cuts; asked
// again it cuts the same (map order must not matter); and makeRoom's
// answer when it cuts nothing is blocksOthers'.
func FuzzHogRule(f *testing.F) {
	f.Add([]byte{2, 0, 2, 1, 2, 2, 2, 3, 2, 64, 2, 65})
	f.Add([]byte{0, 9, 0, 1, 0, 2, 0, 3, 1, 1, 1, 2, 2, 200})
	f.Add([]byte{1, 0, 1, 1, 1, 2, 1, 3, 3, 0, 3, 1, 2, 7, 2, 7})
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) < 4 {
			return
		}
		p := fuzzPeer(in[0], in[1])
		in = in[2:min(len(in), 2+2*64)]
		l := newLimitListener(nil, len(in)/2)
		names := make(map[net.Conn]int)
		since := time.Now()
		for i := 0; i+1 < len(in); i += 2 {
			c, other := net.Pipe()
			defer c.Close()
			defer other.Close()
			q := fuzzPeer(in[i], in[i+1])
			l.byPeer[q]++
			l.served[c] = servedConn{since: since.Add(time.Duration(i)), peer: q}
			names[c] = i/2 + 1
		}
		want := names[hogsConnReference(l, p)]
		for range 3 {
			if got := names[l.hogsConn(p)]; got != want {
				t.Fatalf("newcomer %v: cut connection #%d, the reference #%d", p, got, want)
			}
		}
		if want == 0 {
			blocks := l.blocksOthers(p)
			if made, b := l.makeRoom(p); made || b != blocks {
				t.Fatalf("newcomer %v: makeRoom = %v, %v; blocksOthers %v", p, made, b, blocks)
			}
		}
	})
}
