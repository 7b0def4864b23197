// SPDX-License-Identifier: Apache-2.0

package datapath

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// RemovePinned detaches every link pinned under pinPath and removes every
// pin there (maps, stamps, records) and the directory itself. It is what
// `xlb datapath detach` and a daemon's stop do; a pin path that does not
// exist is already removed.
func RemovePinned(pinPath string) error {
	if _, err := os.Stat(pinPath); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err := OnBPFFS(pinPath); err != nil {
		return fmt.Errorf("remove pinned data path: %w", err)
	}
	var errs []error
	links, _ := os.ReadDir(filepath.Join(pinPath, linksDir))
	for _, e := range links {
		errs = append(errs, detachPinnedLink(filepath.Join(pinPath, linksDir, e.Name())))
	}
	if err := os.RemoveAll(pinPath); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("remove pinned data path %s: %w", pinPath, err)
	}
	return nil
}

// OnBPFFS checks that path is a directory on a bpf file system, so that
// removing it removes pins and nothing else.
func OnBPFFS(path string) error {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if st.Type != unix.BPF_FS_MAGIC {
		return fmt.Errorf("%s is not on a bpf file system (bpffs)", path)
	}
	return nil
}
