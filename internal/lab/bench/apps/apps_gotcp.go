// SPDX-License-Identifier: Apache-2.0

package apps

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"runtime"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xlb-dev/xlb/internal/lab/netns"
	"github.com/xlb-dev/xlb/internal/lab/topo"
)

// The Go clients and servers of TCP_RR, TCP_CRR and TCP_STREAM, in the
// manner of netperf: blocking syscalls on goroutines locked to their OS
// threads, so that no netpoller wake-up adds to a transaction's time.

// maxRRSamples caps the transaction times a client keeps (16 MB); it
// counts every transaction all the same.
const maxRRSamples = 2_000_000

// sockTimeout bounds every blocking connect, read and write of the Go
// clients, so that a lost packet ends a test instead of hanging it.
const sockTimeout = 3 * time.Second

// streamTimeout bounds each blocking write of a TCP_STREAM connection
// and its wait for the server's close: among many connections that fill
// the lab's rings, one may back off for seconds after losses, and wait
// behind the others' queued bytes.
const streamTimeout = 30 * time.Second

// goServerMode is what a Go server does with a connection.
type goServerMode int

const (
	echoMode goServerMode = iota // send back what it reads (TCP_RR, TCP_CRR)
	sinkMode                     // read until the client closes (TCP_STREAM)
)

// goServer listens on a port in some reals' namespaces and serves every
// connection on a goroutine of its own. Close ends them all.
type goServer struct {
	mode   goServerMode
	cpu    int // the CPU every connection's thread runs on, or -1: any
	mu     sync.Mutex
	lfds   []int
	conns  map[int]bool
	closed bool
	wg     sync.WaitGroup
}

// startGoServer listens on port in each real of reals. With cpu >= 0
// every connection is served on that CPU.
func startGoServer(t topo.Topology, reals []int, port int, mode goServerMode, cpu int) (*goServer, error) {
	s := &goServer{mode: mode, cpu: cpu, conns: map[int]bool{}}
	for _, i := range reals {
		var fd int
		err := netns.Run(t.Real(i), func() (err error) {
			fd, err = listenTCP4(port)
			return err
		})
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("start Go server on port %d in %s: %w", port, t.Real(i), err)
		}
		s.lfds = append(s.lfds, fd)
		s.wg.Add(1)
		go s.accept(fd)
	}
	return s, nil
}

// listenTCP4 returns a blocking socket listening on 0.0.0.0:port in the
// calling thread's namespace.
func listenTCP4(port int) (int, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("socket: %w", err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("SO_REUSEADDR: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrInet4{Port: port}); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("bind port %d: %w", port, err)
	}
	if err := unix.Listen(fd, 4096); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("listen: %w", err)
	}
	return fd, nil
}

func (s *goServer) accept(lfd int) {
	defer s.wg.Done()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for {
		fd, _, err := unix.Accept4(lfd, unix.SOCK_CLOEXEC)
		if err == unix.EINTR || err == unix.ECONNABORTED {
			continue
		}
		if err != nil {
			return // Close shut the listener down (EINVAL)
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			unix.Close(fd)
			return
		}
		s.conns[fd] = true
		s.wg.Add(1)
		s.mu.Unlock()
		go s.serve(fd)
	}
}

func (s *goServer) serve(fd int) {
	defer s.wg.Done()
	defer s.drop(fd)
	runtime.LockOSThread()
	if s.cpu < 0 {
		defer runtime.UnlockOSThread()
	} else if pinThread(s.cpu) != nil {
		return // the client sees the connection closed: an error
	}
	// a pinned thread stays locked: it ends with the goroutine instead
	// of taking its CPU mask to other goroutines
	_ = unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
	buf := make([]byte, 256<<10)
	for {
		n, err := unix.Read(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n == 0 {
			return
		}
		if s.mode == echoMode && writeAll(fd, buf[:n]) != nil {
			return
		}
	}
}

// drop closes a connection the server is done with.
func (s *goServer) drop(fd int) {
	s.mu.Lock()
	delete(s.conns, fd)
	unix.Close(fd)
	s.mu.Unlock()
}

// pinThread binds the calling (locked) thread to cpu.
func pinThread(cpu int) error {
	var set unix.CPUSet
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return fmt.Errorf("pin thread to CPU %d: %w", cpu, err)
	}
	return nil
}

// Close stops accepting, ends the connections still open and waits for
// every goroutine of the server.
func (s *goServer) Close() {
	s.mu.Lock()
	s.closed = true
	for _, fd := range s.lfds {
		_ = unix.Shutdown(fd, unix.SHUT_RDWR) // wakes accept
	}
	for fd := range s.conns {
		_ = unix.Shutdown(fd, unix.SHUT_RDWR) // wakes read
	}
	s.mu.Unlock()
	s.wg.Wait()
	for _, fd := range s.lfds {
		unix.Close(fd)
	}
	s.lfds = nil
}

func writeAll(fd int, b []byte) error {
	for len(b) > 0 {
		n, err := unix.Write(fd, b)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// readFull reads len(b) bytes; io.ErrUnexpectedEOF-like errors come as
// errEOF.
func readFull(fd int, b []byte) error {
	for len(b) > 0 {
		n, err := unix.Read(fd, b)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if n == 0 {
			return errEOF
		}
		b = b[n:]
	}
	return nil
}

var errEOF = errors.New("connection closed by the server")

// dialTCP4 returns a blocking, connected socket with TCP_NODELAY and
// sockTimeout on every call.
func dialTCP4(dst netip.AddrPort) (int, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("socket: %w", err)
	}
	tv := unix.NsecToTimeval(sockTimeout.Nanoseconds())
	for _, o := range []int{unix.SO_SNDTIMEO, unix.SO_RCVTIMEO} {
		if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, o, &tv); err != nil {
			unix.Close(fd)
			return -1, fmt.Errorf("socket timeout: %w", err)
		}
	}
	if err := unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("TCP_NODELAY: %w", err)
	}
	if err := connectBlocking(fd, &unix.SockaddrInet4{Port: int(dst.Port()), Addr: dst.Addr().As4()}); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("connect to %s: %w", dst, err)
	}
	return fd, nil
}

// connectBlocking connects a blocking socket. A signal (Go's preemption
// sends SIGURG) interrupts a connect with a send timeout: the kernel then
// goes on with the handshake and connect is not restarted (signal(7)),
// so the outcome is waited for and read from SO_ERROR.
func connectBlocking(fd int, sa unix.Sockaddr) error {
	err := unix.Connect(fd, sa)
	if err != unix.EINTR {
		return err
	}
	pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
	deadline := time.Now().Add(sockTimeout)
	for {
		n, err := unix.Poll(pfd, int(time.Until(deadline).Milliseconds()))
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return err
		case n == 0:
			return unix.ETIMEDOUT
		}
		soErr, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ERROR)
		if err != nil {
			return err
		}
		if soErr != 0 {
			return unix.Errno(soErr)
		}
		return nil
	}
}

// rrStats is what a TCP_RR or TCP_CRR client measured.
type rrStats struct {
	n       uint64        // transactions
	errors  uint64        // failed transactions (TCP_CRR goes on after one)
	elapsed time.Duration // from the first transaction to the end of the last
	samples []float64     // transaction times (µs), the first maxRRSamples
	mean    float64       // over every transaction (µs)
	max     float64       // over every transaction (µs)
}

// runRR runs a netperf-style TCP_RR (one connection, a 1-byte request
// and a 1-byte response at a time) or, with crr, TCP_CRR (a connection
// per transaction: connect, request, response, close) from namespace
// ns to dst for d, on CPU cpu (-1: any).
func runRR(ctx context.Context, ns string, dst netip.AddrPort, d time.Duration, crr bool, cpu int) (rrStats, error) {
	var st rrStats
	err := netns.Run(ns, func() error {
		if cpu >= 0 {
			var old unix.CPUSet
			if err := unix.SchedGetaffinity(0, &old); err != nil {
				return fmt.Errorf("CPU mask: %w", err)
			}
			if err := pinThread(cpu); err != nil {
				return err
			}
			// the thread goes back to Go's pool afterwards
			defer unix.SchedSetaffinity(0, &old)
		}
		st.samples = make([]float64, 0, min(maxRRSamples, 1<<16))
		fd := -1
		if !crr {
			var err error
			if fd, err = dialTCP4(dst); err != nil {
				return err
			}
			defer func() { unix.Close(fd) }()
		}
		var sum float64
		var firstErr error
		req, resp := []byte{'x'}, []byte{0}
		start := time.Now()
		end := start.Add(d)
		for i := 0; ; i++ {
			if i&255 == 0 && ctx.Err() != nil {
				return ctx.Err()
			}
			t0 := time.Now()
			if !t0.Before(end) {
				break
			}
			err := func() error {
				if crr {
					var err error
					if fd, err = dialTCP4(dst); err != nil {
						return err
					}
					defer func() { unix.Close(fd); fd = -1 }()
				}
				if err := writeAll(fd, req); err != nil {
					return fmt.Errorf("send request: %w", err)
				}
				if err := readFull(fd, resp); err != nil {
					return fmt.Errorf("receive response: %w", err)
				}
				return nil
			}()
			us := float64(time.Since(t0).Nanoseconds()) / 1e3
			if err != nil {
				if !crr {
					return fmt.Errorf("TCP_RR to %s after %d transactions: %w", dst, st.n, err)
				}
				st.errors++
				firstErr = cmpOr(firstErr, err)
				if st.errors > 100 && st.errors > st.n {
					return fmt.Errorf("TCP_CRR to %s: %d of %d transactions failed, first: %w", dst, st.errors, st.n+st.errors, firstErr)
				}
				continue
			}
			st.n++
			sum += us
			st.max = max(st.max, us)
			if len(st.samples) < maxRRSamples {
				st.samples = append(st.samples, us)
			}
		}
		st.elapsed = time.Since(start)
		if st.n > 0 {
			st.mean = sum / float64(st.n)
		}
		return nil
	})
	return st, err
}

// cmpOr is the first non-nil error.
func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// streamStats is what a TCP_STREAM client measured.
type streamStats struct {
	bytes       uint64
	elapsed     time.Duration // from the first write until the last server closed
	retransmits uint64        // TCP_INFO total_retrans, summed over the connections
	failed      int           // connections that did not complete: their bytes are not counted
	firstErr    error         // why the first of them failed
}

// runStreams sends as fast as it can over n connections at once from
// namespace ns to dst for d, in 128 KiB writes like iperf3, then
// half-closes each and waits for its server to close: every byte counted
// has arrived. The connections are opened first, then all send. A
// connection that fails (a write or its server's close times out) is
// counted, not its bytes; the run fails only when none completes.
func runStreams(ctx context.Context, ns string, dst netip.AddrPort, d time.Duration, n int) (streamStats, error) {
	var st streamStats
	fds := make([]int, 0, n)
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	err := netns.Run(ns, func() error {
		for len(fds) < n {
			fd, err := dialTCP4(dst)
			if err != nil {
				return fmt.Errorf("connection %d of %d: %w", len(fds)+1, n, err)
			}
			fds = append(fds, fd)
			tv := unix.NsecToTimeval(streamTimeout.Nanoseconds())
			for _, o := range []int{unix.SO_SNDTIMEO, unix.SO_RCVTIMEO} {
				if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, o, &tv); err != nil {
					return fmt.Errorf("socket timeout: %w", err)
				}
			}
		}
		return nil
	})
	if err != nil {
		return st, err
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		start = time.Now()
		end   = start.Add(d)
	)
	for _, fd := range fds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sent, retrans, err := stream(ctx, fd, end)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				st.failed++
				if st.firstErr == nil {
					st.firstErr = fmt.Errorf("TCP_STREAM to %s after %d bytes: %w", dst, sent, err)
				}
				return
			}
			st.bytes += sent
			st.retransmits += retrans
		}()
	}
	wg.Wait()
	st.elapsed = time.Since(start)
	if st.failed == n {
		return st, st.firstErr
	}
	return st, ctx.Err()
}

// stream sends over fd until end, then half-closes and waits for the
// server to close; it returns the bytes sent and the connection's
// retransmissions.
func stream(ctx context.Context, fd int, end time.Time) (sent, retransmits uint64, err error) {
	runtime.LockOSThread() // blocking writes: a thread each
	defer runtime.UnlockOSThread()
	buf := make([]byte, 128<<10)
	for i := 0; time.Now().Before(end); i++ {
		if i&63 == 0 && ctx.Err() != nil {
			return sent, 0, ctx.Err()
		}
		if err := writeAll(fd, buf); err != nil {
			return sent, 0, err
		}
		sent += uint64(len(buf))
	}
	if err := unix.Shutdown(fd, unix.SHUT_WR); err != nil {
		return sent, 0, fmt.Errorf("shutdown: %w", err)
	}
	if err := readFull(fd, make([]byte, 1)); err != errEOF {
		return sent, 0, fmt.Errorf("waiting for the server to close: %v", err)
	}
	if info, err := unix.GetsockoptTCPInfo(fd, unix.IPPROTO_TCP, unix.TCP_INFO); err == nil {
		retransmits = uint64(info.Total_retrans)
	}
	return sent, retransmits, nil
}
