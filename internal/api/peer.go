// SPDX-License-Identifier: Apache-2.0

package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/xlb-dev/xlb/internal/config"
)

// Who may use the API: root may do everything; the members of a read
// group, when the daemon has one, may read (GET and HEAD); nobody else
// may do anything. The socket's mode keeps everyone else from
// connecting at all (0600, or 0660 with the read group), and each
// request is checked against the credentials of the process at the
// other end of its connection (SO_PEERCRED, SO_PEERGROUPS), read when it
// connected.

// Peer is the process at the other end of an API connection, as the
// kernel saw it when it connected.
type Peer struct {
	PID      int32
	UID, GID uint32
	// Groups are its supplementary groups; nil where the kernel cannot
	// tell (before Linux 4.13).
	Groups []uint32
}

// peerKey is the context key of a connection's Peer.
type peerKey struct{}

// ConnContext is an http.Server's ConnContext for a unix socket: it
// records the peer of each connection in the connection's context. A
// connection whose peer cannot be read gets none, and Guard refuses its
// every request.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return ctx
	}
	p, err := peerOf(uc)
	if err != nil {
		return ctx
	}
	return withPeer(ctx, p)
}

func withPeer(ctx context.Context, p Peer) context.Context {
	return context.WithValue(ctx, peerKey{}, p)
}

// PeerFrom returns the peer ConnContext recorded in ctx.
func PeerFrom(ctx context.Context) (Peer, bool) {
	p, ok := ctx.Value(peerKey{}).(Peer)
	return p, ok
}

// peerOf reads the credentials of a unix connection's peer.
func peerOf(c *net.UnixConn) (Peer, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return Peer{}, err
	}
	var p Peer
	var credErr error
	err = raw.Control(func(fd uintptr) {
		var cred *unix.Ucred
		if cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED); credErr != nil {
			return
		}
		p = Peer{PID: cred.Pid, UID: cred.Uid, GID: cred.Gid, Groups: peerGroups(int(fd))}
	})
	if err == nil {
		err = credErr
	}
	if err != nil {
		return Peer{}, fmt.Errorf("peer credentials: %w", err)
	}
	return p, nil
}

// maxPeerGroups bounds the supplementary groups read of a peer (Linux's
// NGROUPS_MAX is 65536).
const maxPeerGroups = 65536

// peerGroups reads the peer's supplementary groups (SO_PEERGROUPS,
// Linux 4.13), or nil.
func peerGroups(fd int) []uint32 {
	groups := make([]uint32, 64)
	for {
		size := uint32(len(groups) * 4)
		_, _, errno := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), unix.SOL_SOCKET, unix.SO_PEERGROUPS,
			uintptr(unsafe.Pointer(&groups[0])), uintptr(unsafe.Pointer(&size)), 0)
		switch {
		case errno == 0:
			return groups[:size/4]
		case errno == unix.ERANGE && int(size/4) > len(groups) && size/4 <= maxPeerGroups:
			groups = make([]uint32, size/4) // size is what the kernel needs
		default:
			return nil
		}
	}
}

// Access is who may use the API besides root.
type Access struct {
	readGroup string
	readGID   int // -1: no read group
}

// NewAccess resolves the read group: a group name or id of this host
// whose members may read the API; "" for root only.
func NewAccess(readGroup string) (Access, error) {
	if readGroup == "" {
		return Access{readGID: -1}, nil
	}
	gid, err := config.LookupGroup(readGroup)
	if err != nil {
		return Access{}, fmt.Errorf("api read group: %w", err)
	}
	return Access{readGroup: readGroup, readGID: int(gid)}, nil
}

// Share sets the socket's mode: 0600 (root only), or with a read group
// 0660 and owned by that group. It warns in the log when a directory
// above the socket keeps the group from reaching it.
func (a Access) Share(path string, log *slog.Logger) error {
	if a.readGID < 0 {
		return os.Chmod(path, 0o600)
	}
	if err := os.Chown(path, 0, a.readGID); err != nil {
		return fmt.Errorf("api socket: %w", err)
	}
	if err := os.Chmod(path, 0o660); err != nil {
		return fmt.Errorf("api socket: %w", err)
	}
	if dir := closedDir(filepath.Dir(path), uint32(a.readGID)); dir != "" {
		log.Warn("the api read group cannot reach the socket: a directory above it is closed to the group (give it o+x, e.g. RuntimeDirectoryMode=0711)",
			"socket", path, "group", a.readGroup, "directory", dir)
	}
	return nil
}

// closedDir returns the first directory from dir up that a member of
// gid (not its owner) cannot search, or "".
func closedDir(dir string, gid uint32) string {
	for {
		st, err := os.Stat(dir)
		if err != nil {
			return dir
		}
		mode := st.Mode().Perm()
		sys, ok := st.Sys().(*syscall.Stat_t)
		if mode&0o001 == 0 && !(ok && sys.Gid == gid && mode&0o010 != 0) {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// errForbidden is the start of every refusal.
var errForbidden = errors.New("forbidden")

// Guard wraps the API's handler: root may do everything, members of the
// read group may only GET and HEAD, and any other peer, or a request
// whose peer is unknown, is refused with 403 and a JSON error.
func (a Access) Guard(h http.Handler, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := a.allow(r); err != nil {
			log.Info("api request refused", "method", r.Method, "path", r.URL.Path, "err", err)
			writeJSON(w, http.StatusForbidden, Error{Error: err.Error()})
			return
		}
		h.ServeHTTP(w, r)
	})
}

// allow says why the request's peer may not make it, or nil.
func (a Access) allow(r *http.Request) error {
	p, ok := PeerFrom(r.Context())
	switch {
	case !ok:
		return fmt.Errorf("%w: the credentials of this connection are unknown", errForbidden)
	case p.UID == 0:
		return nil
	case !a.member(p):
		if a.readGID < 0 {
			return fmt.Errorf("%w: uid %d is not root: the API is root's", errForbidden, p.UID)
		}
		return fmt.Errorf("%w: uid %d is neither root nor in the API's read group %s", errForbidden, p.UID, a.readGroup)
	case r.Method != http.MethodGet && r.Method != http.MethodHead:
		return fmt.Errorf("%w: the read group %s may only read (GET); %s needs root", errForbidden, a.readGroup, r.Method)
	}
	return nil
}

// member tells whether the peer is in the read group.
func (a Access) member(p Peer) bool {
	if a.readGID < 0 {
		return false
	}
	g := uint32(a.readGID)
	return p.GID == g || slices.Contains(p.Groups, g)
}
