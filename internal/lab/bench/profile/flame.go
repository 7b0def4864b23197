// SPDX-License-Identifier: Apache-2.0

package profile

import (
	"fmt"
	"hash/fnv"
	"html"
	"slices"
	"strings"
)

// The flame graph's geometry, in SVG pixels.
const (
	flameWidth  = 1200.0
	frameHeight = 16.0
	flameMargin = 10.0
	flameHeader = 36.0
	charWidth   = 6.5 // of the 11 px monospace labels
	minWidth    = 0.3 // narrower frames are not drawn
)

// node is a frame of the merged call tree: its samples and its callees.
type node struct {
	name     string
	value    int
	children []*node
}

func (n *node) child(name string) *node {
	for _, c := range n.children {
		if c.name == name {
			return c
		}
	}
	c := &node{name: name}
	n.children = append(n.children, c)
	return c
}

// tree merges folded stacks into a call tree under "all".
func tree(stacks map[string]int) (*node, int) {
	root := &node{name: "all"}
	depth := 0
	for stack, n := range stacks {
		cur := root
		cur.value += n
		frames := strings.Split(stack, ";")
		depth = max(depth, len(frames))
		for _, f := range frames {
			cur = cur.child(f)
			cur.value += n
		}
	}
	return root, depth
}

// FlameGraph draws folded stacks as an SVG flame graph: the root at the
// bottom, each frame as wide as its share of the samples, its callees
// above it in name order; hovering a frame names it with its samples.
func FlameGraph(title string, stacks map[string]int) string {
	root, depth := tree(stacks)
	height := flameHeader + float64(depth+1)*frameHeight + 2*flameMargin
	var b strings.Builder
	fmt.Fprintf(&b, `<?xml version="1.0" standalone="no"?>
<svg version="1.1" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" xmlns="http://www.w3.org/2000/svg">
<rect x="0" y="0" width="100%%" height="100%%" fill="#f8f8f0"/>
<text x="%.0f" y="24" font-size="15" font-family="Verdana, sans-serif" text-anchor="middle">%s</text>
<g font-family="monospace" font-size="11">
`, flameWidth, height, flameWidth, height, flameWidth/2, html.EscapeString(title))
	if root.value > 0 {
		scale := (flameWidth - 2*flameMargin) / float64(root.value)
		drawFrame(&b, root, flameMargin, height-flameMargin-frameHeight, scale, root.value)
	}
	b.WriteString("</g>\n</svg>\n")
	return b.String()
}

// drawFrame draws n at (x, y) and its callees above it.
func drawFrame(b *strings.Builder, n *node, x, y, scale float64, total int) {
	w := float64(n.value) * scale
	if w < minWidth {
		return
	}
	fmt.Fprintf(b, `<g><title>%s (%d samples, %.2f%%)</title><rect x="%.1f" y="%.1f" width="%.1f" height="%.0f" fill="%s" rx="2"/>`,
		html.EscapeString(n.name), n.value, 100*float64(n.value)/float64(total), x, y, w, frameHeight-1, frameColor(n.name))
	if chars := int((w - 6) / charWidth); chars >= 3 {
		label := n.name
		if len(label) > chars {
			label = label[:chars-2] + ".."
		}
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f">%s</text>`, x+3, y+frameHeight-4.5, html.EscapeString(label))
	}
	b.WriteString("</g>\n")
	kids := slices.Clone(n.children)
	slices.SortFunc(kids, func(a, c *node) int { return strings.Compare(a.name, c.name) })
	for _, c := range kids {
		drawFrame(b, c, x, y-frameHeight, scale, total)
		x += float64(c.value) * scale
	}
}

// frameColor is a warm colour fixed by the name; BPF programs are blue,
// so that the XDP programs stand out.
func frameColor(name string) string {
	h := fnv.New32a()
	h.Write([]byte(name))
	v := h.Sum32()
	if strings.HasPrefix(name, "bpf_prog_") {
		return fmt.Sprintf("rgb(%d,%d,%d)", 80+v%40, 140+v>>8%50, 230)
	}
	return fmt.Sprintf("rgb(%d,%d,%d)", 205+v%50, 80+v>>8%130, 40+v>>16%40)
}
