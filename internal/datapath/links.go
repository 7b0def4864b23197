// SPDX-License-Identifier: Apache-2.0

package datapath

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cilium/ebpf/link"

	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

// linksDir is the directory, under the pin path, that holds one pinned
// XDP link per attached interface. A pinned link keeps the program
// attached when the process that attached it dies, as Katran and Cilium
// keep forwarding while their agent restarts; the next Load finds it and
// swaps the program in place.
const linksDir = "links"

// linkPin is where the link of ifname attached in mode is pinned: a file
// MODE-IFNAME. The mode is in the name because the kernel does not report
// it for a link, and a link cannot change mode in place. bpffs refuses
// names with a dot, which interface names may have (eth0.100): dots and
// percent signs are written %2e and %25.
func linkPin(pinPath, ifname string, mode loadbalancer.AttachMode) string {
	r := strings.NewReplacer("%", "%25", ".", "%2e")
	return filepath.Join(pinPath, linksDir, mode.String()+"-"+r.Replace(ifname))
}

// linkPinIfname is the interface name a link pin's file name holds.
func linkPinIfname(file string) (string, bool) {
	_, esc, ok := strings.Cut(file, "-")
	if !ok {
		return "", false
	}
	return strings.NewReplacer("%2e", ".", "%25", "%").Replace(esc), true
}

// Attach attaches the program to an interface and makes the interface a
// redirect target. With a pin path, a link a previous run pinned for the
// interface in the same mode is taken over and its program replaced
// atomically (no packet sees no program); the new link is pinned.
func (d *Datapath) Attach(ifname string, mode loadbalancer.AttachMode) error {
	iface, err := net.InterfaceByName(ifname)
	if err != nil {
		return fmt.Errorf("attach xdp to %s: %w", ifname, err)
	}
	if _, ok := d.links[ifname]; ok {
		return fmt.Errorf("attach xdp to %s: %w", ifname, loadbalancer.ErrExists)
	}
	if d.workers != nil && mode == loadbalancer.ModeGeneric {
		return fmt.Errorf("attach xdp to %s: workers run in native mode only (a cpumap takes no frames of generic XDP)", ifname)
	}
	if err := d.AddRedirectTarget(iface.Index); err != nil {
		return fmt.Errorf("attach xdp to %s: %w", ifname, err)
	}
	if d.pinPath != "" {
		l, err := d.takeOver(ifname, iface.Index, mode)
		if err != nil {
			return fmt.Errorf("attach xdp to %s: %w", ifname, err)
		}
		if l != nil {
			d.links[ifname] = l
			return nil
		}
	}
	flags := link.XDPDriverMode
	if mode == loadbalancer.ModeGeneric {
		flags = link.XDPGenericMode
	} else if !d.frags {
		if err := checkMTU(ifname, iface.MTU); err != nil {
			return err
		}
	}
	l, err := link.AttachXDP(link.XDPOptions{Program: d.attachedProgram(), Interface: iface.Index, Flags: flags})
	if err != nil {
		return attachError(ifname, mode, iface.MTU, d.frags, err)
	}
	if d.pinPath != "" {
		path := linkPin(d.pinPath, ifname, mode)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			l.Close()
			return fmt.Errorf("attach xdp to %s: %w", ifname, err)
		}
		if err := l.Pin(path); err != nil {
			l.Close()
			return fmt.Errorf("attach xdp to %s: pin link: %w", ifname, err)
		}
	}
	d.links[ifname] = l
	return nil
}

// takeOver finds the link a previous run pinned for ifname and moves it
// to this program. It returns nil when there is none to take: no pin, a
// pin whose interface is gone (the kernel detached it) or a pin in the
// other mode, which is detached here (a mode change is a gap in
// forwarding on the interface; it is logged by the caller's config).
func (d *Datapath) takeOver(ifname string, ifindex int, mode loadbalancer.AttachMode) (link.Link, error) {
	for _, m := range []loadbalancer.AttachMode{loadbalancer.ModeNative, loadbalancer.ModeGeneric} {
		path := linkPin(d.pinPath, ifname, m)
		l, err := link.LoadPinnedLink(path, nil)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("pinned link %s: %w", path, err)
		}
		info, err := l.Info()
		if err != nil {
			l.Close()
			return nil, fmt.Errorf("pinned link %s: %w", path, err)
		}
		if xdp := info.XDP(); m != mode || xdp == nil || int(xdp.Ifindex) != ifindex {
			// another mode, or an interface that is gone or was re-created
			if err := unpinAndClose(l); err != nil {
				return nil, fmt.Errorf("pinned link %s: %w", path, err)
			}
			continue
		}
		if err := l.Update(d.attachedProgram()); err != nil {
			l.Close()
			return nil, fmt.Errorf("replace the program of pinned link %s: %w", path, err)
		}
		return l, nil
	}
	return nil, nil
}

// Detach removes the program from an interface (and the link's pin).
func (d *Datapath) Detach(ifname string) error {
	l, ok := d.links[ifname]
	if !ok {
		return fmt.Errorf("detach xdp from %s: %w", ifname, loadbalancer.ErrNotFound)
	}
	delete(d.links, ifname)
	if err := unpinAndClose(l); err != nil {
		return fmt.Errorf("detach xdp from %s: %w", ifname, err)
	}
	if iface, err := net.InterfaceByName(ifname); err == nil {
		_ = d.objs.TxPorts.Delete(uint32(iface.Index))
	}
	return nil
}

// PinnedLinks lists the interfaces a pinned link names under pinPath:
// what a previous run attached, whether or not this one has taken it.
func PinnedLinks(pinPath string) ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(pinPath, linksDir))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("pinned links: %w", err)
	}
	var names []string
	for _, e := range entries {
		if name, ok := linkPinIfname(e.Name()); ok && !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	return names, nil
}

// DetachPinned detaches a link a previous run pinned for ifname that this
// Datapath has not taken over (the interface left the configuration).
func (d *Datapath) DetachPinned(ifname string) error {
	if _, ok := d.links[ifname]; ok {
		return d.Detach(ifname)
	}
	for _, m := range []loadbalancer.AttachMode{loadbalancer.ModeNative, loadbalancer.ModeGeneric} {
		if err := detachPinnedLink(linkPin(d.pinPath, ifname, m)); err != nil {
			return fmt.Errorf("detach xdp from %s: %w", ifname, err)
		}
	}
	return nil
}

// detachPinnedLink removes the pin at path (if any) and with it the
// attachment: the link's last reference goes.
func detachPinnedLink(path string) error {
	l, err := link.LoadPinnedLink(path, nil)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		// not a link (or unreadable): the pin is removed all the same
		if rmErr := os.Remove(path); rmErr != nil {
			return errors.Join(err, rmErr)
		}
		return nil
	}
	return unpinAndClose(l)
}

// unpinAndClose removes the link's pin (if it has one) and closes it: the
// program is detached when that was the last reference.
func unpinAndClose(l link.Link) error {
	return errors.Join(l.Unpin(), l.Close())
}
