//! The sandbox's file system: the plan of its root, and the host side's writes into and
//! reads from a run's view of the repository — none of which ever follows a symlink.

use std::collections::{BTreeMap, HashSet};
use std::ffi::CString;
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use crate::error::SandboxError;
use crate::spawn::{cstring, Op, SANDBOX_ID};
use crate::spec::{Collected, Limits, RepoView};

/// System directories bound read-only at the same path (or recreated as the same symlink on a
/// merged-/usr system).
const SYSTEM_DIRS: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32",
];

/// The few host files of `/etc` a program may need: the dynamic linker's cache, the
/// alternatives symlinks (`/usr/bin/cc` and friends point there), certificates, and the
/// protocol tables. Nothing with accounts or secrets.
const ETC_BINDS: &[&str] = &[
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/alternatives",
    "/etc/ssl",
    "/etc/ca-certificates",
    "/etc/protocols",
    "/etc/services",
    "/etc/mime.types",
    "/etc/gai.conf",
];

const DEVICES: &[&str] = &["null", "zero", "full", "random", "urandom"];

const ETC_FILES: &[(&str, &str)] = &[
    (
        "passwd",
        "root:x:0:0:root:/root:/usr/sbin/nologin\nnobody:x:65534:65534:nobody:/tmp/home:/bin/sh\n",
    ),
    ("group", "root:x:0:\nnogroup:x:65534:\n"),
    (
        "hosts",
        "127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n",
    ),
    ("hostname", "clover-sandbox\n"),
    (
        "nsswitch.conf",
        "passwd: files\ngroup: files\nhosts: files\n",
    ),
    ("resolv.conf", ""),
];

/// The sandbox's `HOME`, on its `/tmp`.
pub(crate) const HOME: &str = "/tmp/home";

#[derive(Debug)]
enum Entry {
    Symlink(PathBuf),
    BindDir,
    BindFile,
    Proc,
    Dev,
    Tmp,
    Etc,
    Repo,
}

/// What the root is built from.
#[derive(Debug)]
pub(crate) struct Layout<'a> {
    /// A host directory the run's scratch tmpfs is mounted on, inside the run's private mount
    /// namespace only; nothing ever appears there on the host.
    pub(crate) mount_dir: &'a Path,
    /// Canonical host path of the repository.
    pub(crate) repo: &'a Path,
    /// Canonical host paths to bind read-only.
    pub(crate) binds: &'a [PathBuf],
    pub(crate) view: RepoView,
    pub(crate) limits: &'a Limits,
    /// A detached, idmapped mount of the repository ([`crate::spawn::idmapped_mount`]) to
    /// use as the overlay's lower layer instead of the repository's path.
    pub(crate) idmapped_lower: Option<RawFd>,
    /// Whether the run gets a network namespace of its own, whose `lo` the supervisor brings
    /// up; otherwise it joins a prepared one ([`crate::spawn::new_netns`]) where `lo` is up.
    pub(crate) own_netns: bool,
}

/// The steps that build a root, and where the repository's steps are in them.
#[derive(Debug)]
pub(crate) struct RootOps {
    pub(crate) ops: Vec<Op>,
    /// The repository's mount (overlay, or the tmpfs of a copy).
    pub(crate) repo_op: usize,
    /// Attaching the idmapped lower layer, when there is one.
    pub(crate) lower_op: Option<usize>,
}

/// Whether overlayfs can take `p` as a lower directory: its option syntax has no escape for
/// these characters.
pub(crate) fn overlay_safe(p: &Path) -> bool {
    !p.as_os_str()
        .as_bytes()
        .iter()
        .any(|b| matches!(b, b',' | b':' | b'\\'))
}

/// The steps that build the root.
pub(crate) fn root_ops(l: &Layout) -> Result<RootOps, SandboxError> {
    let m = l.mount_dir;
    let root = m.join("root");
    let c = |p: &Path| cstring("path", p.as_os_str().as_bytes());
    let inside = |p: &Path| -> Result<CString, SandboxError> {
        let mut s = root.as_os_str().as_bytes().to_vec();
        s.extend_from_slice(p.as_os_str().as_bytes());
        cstring("path", s)
    };
    let tmpfs = |target: CString, size: u64, mode: &str, extra: libc::c_ulong| Op::Mount {
        source: c"tmpfs".into(),
        target,
        fstype: Some(c"tmpfs".into()),
        flags: libc::MS_NOSUID | libc::MS_NODEV | extra,
        data: Some(CString::new(format!("size={size},mode={mode}")).expect("no NUL")),
    };

    let mut entries: BTreeMap<PathBuf, Entry> = BTreeMap::new();
    for d in SYSTEM_DIRS {
        let p = Path::new(d);
        match std::fs::symlink_metadata(p) {
            Ok(md) if md.file_type().is_symlink() => {
                let target =
                    std::fs::read_link(p).map_err(|e| SandboxError::io("reading", p, e))?;
                entries.insert(p.into(), Entry::Symlink(target));
            }
            Ok(md) if md.is_dir() => {
                entries.insert(p.into(), Entry::BindDir);
            }
            _ => {}
        }
    }
    entries.insert("/etc".into(), Entry::Etc);
    for f in ETC_BINDS {
        let p = Path::new(f);
        match std::fs::metadata(p) {
            Ok(md) if md.is_dir() => {
                entries.insert(p.into(), Entry::BindDir);
            }
            Ok(_) => {
                entries.insert(p.into(), Entry::BindFile);
            }
            Err(_) => {}
        }
    }
    entries.insert("/proc".into(), Entry::Proc);
    entries.insert("/dev".into(), Entry::Dev);
    entries.insert("/tmp".into(), Entry::Tmp);
    for b in l.binds {
        if b.starts_with(l.repo) {
            // Already visible through the repository's own view.
            continue;
        }
        if b == Path::new("/") || b.starts_with("/proc") || b.starts_with("/dev") {
            return Err(SandboxError::InvalidSpec(format!(
                "cannot bind {} into the sandbox; bind a directory below it",
                b.display()
            )));
        }
        let md = std::fs::metadata(b).map_err(|e| SandboxError::io("binding", b, e))?;
        let e = if md.is_dir() {
            Entry::BindDir
        } else {
            Entry::BindFile
        };
        entries.entry(b.clone()).or_insert(e);
    }
    entries.insert(l.repo.to_path_buf(), Entry::Repo);

    let mut ops = vec![
        Op::MakeRprivate,
        tmpfs(c(m)?, l.limits.overlay_bytes, "0700", 0),
        Op::Mkdir {
            path: c(&m.join("upper"))?,
            mode: 0o755,
        },
        Op::Mkdir {
            path: c(&m.join("work"))?,
            mode: 0o700,
        },
        Op::Mkdir {
            path: c(&root)?,
            mode: 0o755,
        },
        tmpfs(c(&root)?, 4 << 20, "0755", 0),
    ];
    let mut made: HashSet<PathBuf> = HashSet::new();
    let mut repo_op = 0;
    let mut lower_op = None;
    for (target, entry) in &entries {
        for anc in target
            .ancestors()
            .skip(1)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
        {
            if anc != Path::new("/") && made.insert(anc.to_path_buf()) {
                ops.push(Op::Mkdir {
                    path: inside(anc)?,
                    mode: 0o755,
                });
            }
        }
        let t = inside(target)?;
        let mkdir = |mode| Op::Mkdir {
            path: t.clone(),
            mode,
        };
        let bind = |flags| -> Result<Op, SandboxError> {
            Ok(Op::Mount {
                source: c(target)?,
                target: t.clone(),
                fstype: None,
                flags,
                data: None,
            })
        };
        match entry {
            Entry::Symlink(to) => ops.push(Op::Symlink {
                target: c(to)?,
                path: t.clone(),
            }),
            Entry::BindDir => {
                ops.push(mkdir(0o755));
                ops.push(bind(libc::MS_BIND | libc::MS_REC)?);
                ops.push(Op::ReadOnly {
                    path: t.clone(),
                    recursive: true,
                });
            }
            Entry::BindFile => {
                ops.push(Op::MkFile { path: t.clone() });
                ops.push(bind(libc::MS_BIND)?);
                ops.push(Op::ReadOnly {
                    path: t.clone(),
                    recursive: false,
                });
            }
            Entry::Proc => {
                ops.push(mkdir(0o755));
                ops.push(Op::Mount {
                    source: c"proc".into(),
                    target: t.clone(),
                    fstype: Some(c"proc".into()),
                    flags: libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                    // The payload sees only its own uid's processes: the supervisor (uid 0
                    // inside) is a clone of the caller that never execs, so its cmdline,
                    // which anyone may read, would be the caller's argv. `2` is `invisible`
                    // in the spelling kernels before 5.8 know.
                    data: Some(c"hidepid=2".into()),
                });
            }
            Entry::Dev => {
                ops.push(mkdir(0o755));
                ops.push(tmpfs(
                    t.clone(),
                    l.limits.tmpfs_bytes,
                    "0755",
                    libc::MS_NOEXEC,
                ));
                for d in DEVICES {
                    let host = Path::new("/dev").join(d);
                    let path = inside(&host)?;
                    ops.push(Op::MkFile { path: path.clone() });
                    ops.push(Op::Mount {
                        source: c(&host)?,
                        target: path,
                        fstype: None,
                        flags: libc::MS_BIND,
                        data: None,
                    });
                }
                for (name, to) in [
                    ("fd", "/proc/self/fd"),
                    ("stdin", "/proc/self/fd/0"),
                    ("stdout", "/proc/self/fd/1"),
                    ("stderr", "/proc/self/fd/2"),
                ] {
                    ops.push(Op::Symlink {
                        target: cstring("path", to)?,
                        path: inside(&Path::new("/dev").join(name))?,
                    });
                }
                ops.push(Op::Mkdir {
                    path: inside(Path::new("/dev/shm"))?,
                    mode: 0o1777,
                });
            }
            Entry::Tmp => {
                ops.push(mkdir(0o755));
                ops.push(tmpfs(t.clone(), l.limits.tmpfs_bytes, "1777", 0));
                let home = inside(Path::new(HOME))?;
                ops.push(Op::Mkdir {
                    path: home.clone(),
                    mode: 0o700,
                });
                ops.push(Op::Chown {
                    path: home,
                    uid: SANDBOX_ID,
                    gid: SANDBOX_ID,
                });
            }
            Entry::Etc => {
                ops.push(mkdir(0o755));
                for (name, text) in ETC_FILES {
                    ops.push(Op::WriteFile {
                        path: inside(&Path::new("/etc").join(name))?,
                        contents: text.as_bytes().to_vec(),
                    });
                }
            }
            Entry::Repo => {
                ops.push(mkdir(0o755));
                match l.view {
                    RepoView::Overlay => {
                        // The merged root takes the upper root's owner: the repository's top
                        // directory is the sandbox user's to write in.
                        ops.push(Op::Chown {
                            path: c(&m.join("upper"))?,
                            uid: SANDBOX_ID,
                            gid: SANDBOX_ID,
                        });
                        // With an idmapped lower layer the checked-in files appear as the
                        // sandbox user's, so a test may also change them (in its copy-up).
                        let lower = match l.idmapped_lower {
                            Some(fd) => {
                                let at = m.join("lower");
                                ops.push(Op::Mkdir {
                                    path: c(&at)?,
                                    mode: 0o755,
                                });
                                lower_op = Some(ops.len());
                                ops.push(Op::MoveMount {
                                    fd,
                                    target: c(&at)?,
                                });
                                at
                            }
                            None => target.clone(),
                        };
                        let data = format!(
                            "lowerdir={},upperdir={},workdir={},userxattr",
                            lower.display(),
                            m.join("upper").display(),
                            m.join("work").display()
                        );
                        repo_op = ops.len();
                        ops.push(Op::Mount {
                            source: c"overlay".into(),
                            target: t.clone(),
                            fstype: Some(c"overlay".into()),
                            flags: libc::MS_NOSUID | libc::MS_NODEV,
                            data: Some(cstring("repository path", data)?),
                        });
                    }
                    RepoView::Copy => {
                        repo_op = ops.len();
                        ops.push(tmpfs(t.clone(), l.limits.overlay_bytes, "0755", 0));
                        ops.push(Op::Chown {
                            path: t.clone(),
                            uid: SANDBOX_ID,
                            gid: SANDBOX_ID,
                        });
                    }
                }
            }
        }
        made.insert(target.clone());
    }
    ops.push(Op::ReadOnly {
        path: c(&root)?,
        recursive: false,
    });
    ops.push(Op::PivotRoot {
        new_root: c(&root)?,
    });
    // No user namespaces below ours: a nested one would hand the payload capabilities again.
    ops.push(Op::WriteExisting {
        path: c"/proc/sys/user/max_user_namespaces".into(),
        contents: b"0".to_vec(),
    });
    ops.push(Op::Hostname {
        name: c"clover-sandbox".into(),
    });
    if l.own_netns {
        ops.push(Op::LoopbackUp);
    }
    Ok(RootOps {
        ops,
        repo_op,
        lower_op,
    })
}

/// Rejects absolute paths and `..`: everything the caller names lives below the repository.
pub fn check_relative(what: &str, p: &Path) -> Result<(), SandboxError> {
    if p.components()
        .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
    {
        Ok(())
    } else {
        Err(SandboxError::InvalidSpec(format!(
            "{what} {} must be relative to the repository, without `..`",
            p.display()
        )))
    }
}

const RESOLVE_NO_XDEV: u64 = 0x01;
const RESOLVE_NO_MAGICLINKS: u64 = 0x02;
const RESOLVE_NO_SYMLINKS: u64 = 0x04;
const RESOLVE_BENEATH: u64 = 0x08;

#[repr(C)]
struct OpenHow {
    flags: u64,
    mode: u64,
    resolve: u64,
}

/// `openat2` below `dir`, refusing symlinks anywhere on the way and any escape.
pub(crate) fn open_beneath(dir: RawFd, rel: &Path, flags: i32, mode: u32) -> io::Result<OwnedFd> {
    let path = if rel.as_os_str().is_empty() {
        CString::new(".").expect("no NUL")
    } else {
        CString::new(rel.as_os_str().as_bytes())
            .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?
    };
    let how = OpenHow {
        flags: (flags | libc::O_CLOEXEC | libc::O_NOFOLLOW) as u64,
        mode: mode as u64,
        resolve: RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV,
    };
    loop {
        // SAFETY: path and how are valid for the call; the result is a new descriptor.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_openat2,
                dir,
                path.as_ptr(),
                &how as *const OpenHow,
                std::mem::size_of::<OpenHow>(),
            )
        };
        if fd >= 0 {
            // SAFETY: openat2 returned a fresh descriptor that we now own.
            return Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) });
        }
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EAGAIN) && e.raw_os_error() != Some(libc::EINTR) {
            return Err(e);
        }
    }
}

fn fchown_fd(fd: RawFd, uid: u32) -> io::Result<()> {
    // SAFETY: an empty path with AT_EMPTY_PATH acts on fd itself.
    let r = unsafe { libc::fchownat(fd, c"".as_ptr(), uid, uid, libc::AT_EMPTY_PATH) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Creates `rel` and its missing parents below `dir`, giving each to `uid`; returns an
/// `O_PATH` descriptor of it.
pub(crate) fn mkdir_beneath(dir: RawFd, rel: &Path, uid: u32) -> io::Result<OwnedFd> {
    let mut cur = open_beneath(dir, Path::new(""), libc::O_PATH | libc::O_DIRECTORY, 0)?;
    for comp in rel.components() {
        let Component::Normal(name) = comp else {
            continue;
        };
        let cname = CString::new(name.as_bytes())
            .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        // SAFETY: cname is a valid C string; cur is a directory descriptor.
        let r = unsafe { libc::mkdirat(cur.as_raw_fd(), cname.as_ptr(), 0o755) };
        let created = r == 0;
        if !created && io::Error::last_os_error().raw_os_error() != Some(libc::EEXIST) {
            return Err(io::Error::last_os_error());
        }
        let next = open_beneath(
            cur.as_raw_fd(),
            Path::new(name),
            libc::O_PATH | libc::O_DIRECTORY,
            0,
        )?;
        if created {
            fchown_fd(next.as_raw_fd(), uid)?;
        }
        cur = next;
    }
    Ok(cur)
}

/// Gives the directory `rel` (created if missing) to `uid`.
pub(crate) fn make_writable(dir: RawFd, rel: &Path, uid: u32) -> io::Result<()> {
    let fd = mkdir_beneath(dir, rel, uid)?;
    fchown_fd(fd.as_raw_fd(), uid)
}

/// Writes a file below `dir` (parents created), owned by `uid`.
pub(crate) fn write_beneath(dir: RawFd, rel: &Path, contents: &[u8], uid: u32) -> io::Result<()> {
    let parent = rel.parent().unwrap_or(Path::new(""));
    let name = rel
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no file name"))?;
    let pfd = mkdir_beneath(dir, parent, uid)?;
    crate::spawn::writing_files(|| {
        let fd = open_beneath(
            pfd.as_raw_fd(),
            Path::new(name),
            libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC,
            0o644,
        )?;
        fchown_fd(fd.as_raw_fd(), uid)?;
        let mut f = File::from(fd);
        io::Write::write_all(&mut f, contents)
    })
}

/// Reads a regular file below `dir`, at most `cap` bytes, never through a symlink.
pub(crate) fn read_beneath(dir: RawFd, rel: &Path, cap: u64) -> Collected {
    let fd = match open_beneath(
        dir,
        rel,
        libc::O_RDONLY | libc::O_NONBLOCK | libc::O_NOCTTY,
        0,
    ) {
        Ok(fd) => fd,
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Collected::Missing,
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return Collected::Refused("a symlink is on the path".into())
        }
        Err(e) if e.raw_os_error() == Some(libc::EXDEV) => {
            return Collected::Refused("the path leaves the repository".into())
        }
        Err(e) => return Collected::Refused(format!("cannot open: {e}")),
    };
    let f = File::from(fd);
    match f.metadata() {
        Ok(md) if md.is_file() => {}
        Ok(_) => return Collected::Refused("not a regular file".into()),
        Err(e) => return Collected::Refused(format!("cannot stat: {e}")),
    }
    let mut bytes = Vec::new();
    match f.take(cap + 1).read_to_end(&mut bytes) {
        Ok(_) => {
            let truncated = bytes.len() as u64 > cap;
            bytes.truncate(cap as usize);
            Collected::Read { bytes, truncated }
        }
        Err(e) => Collected::Refused(format!("cannot read: {e}")),
    }
}

/// Copies the repository into the run's tmpfs where overlayfs is unavailable: regular files,
/// directories and symlinks (as symlinks); anything else is skipped. The copies belong to
/// `uid`, as the checked-in files of an (idmapped) overlay do.
pub(crate) fn copy_tree(src: &Path, dst: &Path, uid: u32) -> io::Result<()> {
    for entry in std::fs::read_dir(src)? {
        let entry = entry?;
        let ft = entry.file_type()?;
        let to = dst.join(entry.file_name());
        if ft.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(entry.path())?, &to)?;
        } else if ft.is_dir() {
            std::fs::create_dir(&to)?;
            copy_tree(&entry.path(), &to, uid)?;
        } else if ft.is_file() {
            crate::spawn::writing_files(|| std::fs::copy(entry.path(), &to))?;
        } else {
            continue;
        }
        std::os::unix::fs::lchown(&to, Some(uid), Some(uid))?;
    }
    Ok(())
}

/// Free bytes of the file system holding `fd`, and its size.
pub(crate) fn fs_space(fd: RawFd) -> Option<(u64, u64)> {
    // SAFETY: st is a valid out-parameter.
    unsafe {
        let mut st: libc::statfs = std::mem::zeroed();
        if libc::fstatfs(fd, &mut st) != 0 {
            return None;
        }
        let bs = st.f_bsize as u64;
        Some((st.f_bavail as u64 * bs, st.f_blocks as u64 * bs))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_only() {
        assert!(check_relative("file", Path::new("tests/test_x.py")).is_ok());
        assert!(check_relative("file", Path::new("")).is_ok());
        assert!(check_relative("file", Path::new("/etc/passwd")).is_err());
        assert!(check_relative("file", Path::new("a/../../b")).is_err());
    }

    #[test]
    fn reading_refuses_symlinks_and_escapes() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("d")).unwrap();
        std::fs::write(dir.path().join("d/ok.txt"), "hello").unwrap();
        std::os::unix::fs::symlink("/etc/hostname", dir.path().join("link")).unwrap();
        std::os::unix::fs::symlink("d", dir.path().join("dlink")).unwrap();
        let root = File::open(dir.path()).unwrap();
        let fd = root.as_raw_fd();
        assert_eq!(
            read_beneath(fd, Path::new("d/ok.txt"), 3),
            Collected::Read {
                bytes: b"hel".to_vec(),
                truncated: true
            }
        );
        assert!(matches!(
            read_beneath(fd, Path::new("link"), 100),
            Collected::Refused(_)
        ));
        assert!(matches!(
            read_beneath(fd, Path::new("dlink/ok.txt"), 100),
            Collected::Refused(_)
        ));
        assert!(matches!(
            read_beneath(fd, Path::new("d"), 100),
            Collected::Refused(_)
        ));
        assert_eq!(read_beneath(fd, Path::new("nope"), 100), Collected::Missing);
    }

    #[test]
    fn writing_creates_parents_and_refuses_symlinked_dirs() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("evil")).unwrap();
        let root = File::open(dir.path()).unwrap();
        let uid = unsafe { libc::geteuid() };
        write_beneath(root.as_raw_fd(), Path::new("a/b/c.txt"), b"x", uid).unwrap();
        assert_eq!(std::fs::read(dir.path().join("a/b/c.txt")).unwrap(), b"x");
        assert!(write_beneath(root.as_raw_fd(), Path::new("evil/c.txt"), b"x", uid).is_err());
        assert!(std::fs::read_dir(outside.path()).unwrap().next().is_none());
    }

    #[test]
    fn overlay_option_syntax_is_respected() {
        assert!(overlay_safe(Path::new("/tmp/repo")));
        assert!(!overlay_safe(Path::new("/tmp/a,b")));
        assert!(!overlay_safe(Path::new("/tmp/a:b")));
    }
}
