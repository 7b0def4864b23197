// SPDX-License-Identifier: Apache-2.0

package keepalived

import (
	"fmt"
	"net/netip"
	"sort"
	"strconv"
	"strings"

	"github.com/xlb-dev/xlb/internal/config"
)

// Options are what xlb needs and a keepalived configuration does not say.
type Options struct {
	// Interfaces are the interfaces XDP attaches to.
	Interfaces []string
	// LocalIPs are FullNAT local IPs, IPv4 and IPv6 together: a service
	// takes those of its VIP's family, unless it names a DPVS
	// local_address_group.
	LocalIPs []string
}

// Unmapped is a statement of the keepalived configuration that xlb's
// configuration does not carry, or carries with a change that the
// operator needs to know about.
type Unmapped struct {
	File string `json:"file"`
	Line int    `json:"line"`
	Text string `json:"text"` // the statement, " {...}" standing for its block
	Why  string `json:"why"`

	seq int // reading order of the statement
}

// String formats the item as FILE:LINE: TEXT: WHY.
func (u Unmapped) String() string { return fmt.Sprintf("%s:%d: %s: %s", u.File, u.Line, u.Text, u.Why) }

// ImportFile reads the keepalived configuration at path, with the files
// it includes, and converts it as Convert does.
func ImportFile(path string, opts Options) (*config.Config, []Unmapped, error) {
	nodes, err := ParseFile(path)
	if err != nil {
		return nil, nil, err
	}
	return Convert(nodes, opts)
}

// Convert converts keepalived statements to an xlb configuration. Every
// statement is either mapped or listed in the returned Unmapped items,
// in reading order. The configuration is not validated. The error is
// about the options only.
func Convert(nodes []*Node, opts Options) (*config.Config, []Unmapped, error) {
	c := &converter{
		cfg:     &config.Config{Interfaces: append([]string{}, opts.Interfaces...), Services: []config.Service{}},
		laddrs:  map[bool][]string{},
		handled: map[*Node]bool{},
		listed:  map[*Node]bool{},
		noted:   map[noteKey]bool{},
		groups:  map[string]*Node{},
		lgroups: map[string]*Node{},
		targets: map[*Node][]target{},
		lips:    map[*Node][]netip.Addr{},
	}
	for _, s := range opts.LocalIPs {
		canon, a, err := config.ParseLocalIPs(s)
		if err != nil {
			return nil, nil, fmt.Errorf("local IP %q: %w", s, err)
		}
		c.laddrs[a.Is4()] = append(c.laddrs[a.Is4()], canon)
	}
	top := c.flatten(nodes)
	// Groups first: a virtual_server may name one defined after it.
	for _, n := range top {
		switch n.Keyword() {
		case "virtual_server_group":
			c.define(c.groups, n)
		case "local_address_group":
			c.define(c.lgroups, n)
		}
	}
	for _, n := range top {
		if n.Keyword() == "global_defs" && n.HasBlock {
			for _, s := range c.children(n) {
				c.scriptUser = c.scriptUser || s.Keyword() == "script_user"
			}
		}
	}
	for _, n := range top {
		c.topLevel(n)
	}
	for _, n := range top {
		if k := n.Keyword(); (k == "virtual_server_group" || k == "local_address_group") && !c.handled[n] {
			c.skip(n, "no virtual_server uses it")
		}
	}
	c.sweep(nodes)
	sort.SliceStable(c.out, func(i, j int) bool { return c.out[i].seq < c.out[j].seq })
	return c.cfg, c.out, nil
}

// Marshal writes a configuration as YAML, indented by two spaces.
func Marshal(cfg *config.Config) ([]byte, error) { return config.Marshal(cfg) }

// converter holds the state of one conversion.
type converter struct {
	cfg     *config.Config
	laddrs  map[bool][]string // --laddr by family (true: IPv4)
	out     []Unmapped
	handled map[*Node]bool // mapped or listed
	listed  map[*Node]bool // listed whole: its block is not looked into
	noted   map[noteKey]bool
	groups  map[string]*Node       // virtual_server_group by name
	lgroups map[string]*Node       // DPVS local_address_group by name
	targets map[*Node][]target     // a virtual_server_group's addresses
	lips    map[*Node][]netip.Addr // a local_address_group's addresses
	// scriptUser is true when global_defs has a script_user
	scriptUser bool
}

// noteKey identifies a note, so that one said twice is listed once.
type noteKey struct {
	n   *Node
	why string
}

// mapped records that a statement was imported.
func (c *converter) mapped(n *Node) {
	c.handled[n] = true
	c.unreadBlock(n)
}

// note lists a statement with why; its block, if any, is still looked
// into.
func (c *converter) note(n *Node, why string) {
	c.list(n, why)
	c.unreadBlock(n)
}

// list records a statement and why, once.
func (c *converter) list(n *Node, why string) {
	c.handled[n] = true
	if c.noted[noteKey{n, why}] {
		return
	}
	c.noted[noteKey{n, why}] = true
	c.out = append(c.out, Unmapped{File: n.File, Line: n.Line, Text: n.Text(), Why: why, seq: n.seq})
}

// unreadBlock lists, unread, the { } block after a statement that takes
// none.
func (c *converter) unreadBlock(n *Node) {
	if n.HasBlock && !blockStatements[n.Keyword()] && checkTypes[n.Keyword()] == "" {
		c.list(n, fmt.Sprintf("%s takes no { } block: the block is not imported", n.Keyword()))
		c.listed[n] = true
	}
}

// blockStatements are the statements, besides the checkers, whose { }
// block the conversion reads.
var blockStatements = map[string]bool{"global_defs": true, "virtual_server_group": true, "local_address_group": true,
	"virtual_server": true, "real_server": true, "url": true}

// skip lists a statement, with its whole block, as not imported.
func (c *converter) skip(n *Node, why string) {
	c.list(n, why)
	c.listed[n] = true
}

// sweep lists every statement that the conversion neither mapped nor
// listed, so that nothing is dropped without a word, even a statement
// the converter overlooked.
func (c *converter) sweep(nodes []*Node) {
	for _, n := range nodes {
		switch {
		case c.listed[n]:
		case !c.handled[n]:
			c.skip(n, "not imported: xlb import does not know this statement here")
		default:
			c.sweep(n.Block)
		}
	}
}

// flatten returns the statements with includes replaced by what they
// read. An include that read no file is listed.
func (c *converter) flatten(nodes []*Node) []*Node {
	var out []*Node
	for _, n := range nodes {
		if !n.IsInclude() {
			out = append(out, n)
			continue
		}
		if len(n.Files) == 0 {
			c.skip(n, "the include matched no file")
			continue
		}
		c.mapped(n)
		out = append(out, c.flatten(n.Block)...)
	}
	return out
}

// children returns the statements of n's block, includes expanded.
func (c *converter) children(n *Node) []*Node { return c.flatten(n.Block) }

// define records a named group; a second group of the same name is
// listed.
func (c *converter) define(m map[string]*Node, n *Node) {
	switch {
	case len(n.Args()) == 0 || !n.HasBlock:
		c.skip(n, "a group needs a name and a { } block")
	case m[n.Args()[0]] != nil:
		first := m[n.Args()[0]]
		c.skip(n, fmt.Sprintf("a second group named %s; the one at %s:%d is used", n.Args()[0], first.File, first.Line))
	default:
		m[n.Args()[0]] = n
	}
}

// topLevel converts one top-level statement.
func (c *converter) topLevel(n *Node) {
	k := n.Keyword()
	switch {
	case k == "virtual_server":
		c.virtualServer(n)
	case k == "virtual_server_group" || k == "local_address_group":
		// used, or listed, by the virtual servers
	case k == "global_defs" && n.HasBlock:
		c.globalDefs(n)
	case strings.HasPrefix(k, "vrrp_"):
		c.skip(n, whyVRRP)
	default:
		c.skip(n, otherWhy(k, topWhy, "not a keepalived statement xlb knows"))
	}
}

// otherWhy says why a statement is not imported: from the table, for a
// conditional line or a parameter definition, or def.
func otherWhy(k string, table map[string]string, def string) string {
	switch {
	case table[k] != "":
		return table[k]
	case strings.HasPrefix(k, "@"):
		return "a conditional line (@ID): xlb import does not evaluate keepalived's config ids; keep the line this host uses, without its @ID"
	case strings.HasPrefix(k, "$"):
		return "keepalived parameters ($NAME) are not expanded: write their values in"
	}
	return def
}

// globalDefs maps lvs_timeouts and lists the rest of global_defs.
func (c *converter) globalDefs(n *Node) {
	c.mapped(n)
	for _, s := range c.children(n) {
		k := s.Keyword()
		switch {
		case k == "lvs_timeouts":
			c.lvsTimeouts(s)
		case strings.HasPrefix(k, "vrrp_") || k == "dynamic_interfaces" || strings.HasPrefix(k, "garp_"):
			c.skip(s, whyVRRP)
		case strings.HasPrefix(k, "smtp_") || strings.HasPrefix(k, "notification_email") || k == "no_email_faults":
			c.skip(s, whyEmail)
		case k == "lvs_sync_daemon" || k == "lvs_sync_daemon_interface":
			c.skip(s, "xlb does not run IPVS's connection sync daemon")
		case k == "script_user":
			user, group, ok := scriptUser(s.Args())
			if !ok {
				c.skip(s, "want script_user USERNAME [GROUPNAME]")
				continue
			}
			c.cfg.ExecChecks = &config.ExecChecks{User: user, Group: group}
			c.mapped(s)
		case k == "enable_script_security":
			c.note(s, "xlb does not check who can write a check's program: it runs checks as exec_checks.user (nobody unless set), as root only where a check says user: root")
		case k == "lvs_flush" || k == "lvs_flush_onstop":
			c.skip(s, "xlb owns its own tables: there is no IPVS table to flush")
		default:
			c.skip(s, otherWhy(k, nil, whyDaemon))
		}
	}
}

// lvsTimeouts maps "lvs_timeouts [tcp SECS] [tcpfin SECS] [udp SECS]" to
// timeouts.
func (c *converter) lvsTimeouts(n *Node) {
	args := n.Args()
	t := config.Timeouts{}
	if c.cfg.Timeouts != nil {
		t = *c.cfg.Timeouts
	}
	if len(args) == 0 || len(args)%2 != 0 {
		c.skip(n, "want lvs_timeouts [tcp SECS] [tcpfin SECS] [udp SECS]")
		return
	}
	for i := 0; i < len(args); i += 2 {
		v, err := strconv.Atoi(args[i+1])
		if err != nil || v <= 0 {
			c.skip(n, fmt.Sprintf("%q is not a number of seconds", args[i+1]))
			return
		}
		switch args[i] {
		case "tcp":
			t.TCP = v
		case "tcpfin":
			t.TCPFin = v
		case "udp":
			t.UDP = v
		default:
			c.skip(n, fmt.Sprintf("%q is not a timeout (want tcp, tcpfin or udp)", args[i]))
			return
		}
	}
	c.cfg.Timeouts = &t
	c.mapped(n)
}
