"""The files an API description may read: one file, a folder, or a zip archive.

A description may include other files (``$ref: schemas/pet.yaml``, RAML ``!include``), but
only files inside its bundle: relative paths that stay inside the folder or archive. Absolute
paths, ``..`` escapes, symlinks leading out, and every remote URL are refused, never fetched.
When a single file is given on the command line its folder is the bundle; an uploaded file
(bytes) is a bundle of one, unless it is a zip.
"""

from __future__ import annotations

import io
import os
import posixpath
import re
import shlex
import stat
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote

from gatebench.core.errors import Problem, SpecSyntaxError
from gatebench.core.spec._limits import Limits

SPEC_SUFFIXES = (".yaml", ".yml", ".json", ".raml")
_ROOT_HINT = re.compile(
    rb"""(?m)^\s*[{\s]*["']?(openapi|swagger)["']?\s*:|\A(?:\xef\xbb\xbf)?#%RAML[ \t]+(1\.0|0\.8)[ \t]*\r?$"""
)
_ENCRYPTED = 0x1
"""The zip general-purpose flag of an encrypted member (APPNOTE.TXT 4.4.4)."""
_BENCH_HINT = re.compile(rb"""(?m)^\s*[{\s]*["']?x-gatebench["']?\s*:""")


class OutsideBundle(ValueError):
    """A path that would leave the bundle."""


def join_inside(base: str, target: str) -> str:
    """Resolve ``target`` relative to the bundle file ``base``; raise if it leaves the bundle."""
    if "\x00" in target or "\\" in target:
        raise OutsideBundle("a path may not contain backslashes or NUL characters")
    if re.match(r"^([A-Za-z][A-Za-z0-9+.-]+:)?//", target):
        raise OutsideBundle(
            "a URL is never fetched: put the file in the bundle (a folder or zip) and give "
            "its relative path"
        )
    if target.startswith("/") or re.match(r"^[A-Za-z]:", target):
        raise OutsideBundle("absolute paths point outside the bundle")
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(base), target))
    if joined == ".." or joined.startswith("../") or joined == ".":
        raise OutsideBundle("the path leaves the bundle")
    return joined


@dataclass
class Bundle:
    """Read access to a set of files, with a total size budget."""

    label: str
    entry: str
    limits: Limits
    _files: dict[str, bytes] | None = None
    _root: Path | None = None
    _read_total: int = 0
    _cache: dict[str, bytes] = field(default_factory=dict)
    single_file: bool = False
    """A file given on its own: its folder is the bundle (see :meth:`wider_folder`)."""
    warnings: list[Problem] = field(default_factory=list)
    """What reading the bundle itself found (a zip member named twice)."""

    @property
    def is_folder(self) -> bool:
        return self._root is not None

    def names(self) -> list[str]:
        if self._files is not None:
            return sorted(self._files)
        assert self._root is not None
        out: list[str] = []
        for dirpath, dirnames, filenames in os.walk(self._root):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            for filename in filenames:
                rel = os.path.relpath(os.path.join(dirpath, filename), self._root)
                out.append(rel.replace(os.sep, "/"))
                if len(out) > self.limits.max_files:
                    raise SpecSyntaxError(
                        [
                            Problem(
                                "",
                                f"the folder holds more than {self.limits.max_files} files",
                                source=self.label,
                            )
                        ]
                    )
        return sorted(out)

    def exists(self, name: str) -> bool:
        """Whether the bundle holds ``name``; raises OutsideBundle when a symlink leads out."""
        if self._files is not None:
            return name in self._files
        assert self._root is not None
        return self._safe_path(name).is_file()

    def read(self, name: str) -> bytes:
        if name in self._cache:
            return self._cache[name]
        if self._files is not None:
            if name not in self._files:
                raise FileNotFoundError(name)
            data = self._files[name]
        else:
            path = self._safe_path(name)
            st = path.stat()
            if not stat.S_ISREG(st.st_mode):
                raise FileNotFoundError(name)
            if self._read_total + st.st_size > self.limits.max_bytes:
                raise self._too_big()
            with path.open("rb") as fh:
                data = fh.read(self.limits.max_bytes + 1)
        self._read_total += len(data)
        if self._read_total > self.limits.max_bytes:
            raise self._too_big()
        self._cache[name] = data
        return data

    def name_for_file_uri(self, path: str) -> str:
        """Map an absolute ``file:`` path to a bundle name, if it lies inside a folder bundle."""
        if self._root is None:
            raise OutsideBundle("file: URIs are not allowed in an uploaded description")
        real = os.path.realpath(path)
        root = os.path.realpath(self._root)
        if os.path.commonpath([real, root]) != root:
            raise OutsideBundle("the file lies outside the bundle")
        return os.path.relpath(real, root).replace(os.sep, "/")

    def wider_folder(self, base: str, target: str) -> str:
        """For a single file whose relative reference ``target`` (from bundle file ``base``)
        leads to an existing file outside its folder: what to pass instead, ``gatebench
        validate DIR --entry PATH`` with DIR the folder holding both. "" otherwise (an upload
        stays confined to its bundle)."""
        if not self.single_file or self._root is None or target.startswith("/"):
            return ""
        entry = os.path.join(self._root, self.entry)
        wanted = os.path.normpath(os.path.join(self._root, os.path.dirname(base), target))
        if not os.path.isfile(wanted):
            return ""
        common = os.path.commonpath([os.path.abspath(entry), os.path.abspath(wanted)])
        shown = common if os.path.isabs(self.label) else os.path.relpath(common)
        inside = os.path.relpath(os.path.abspath(entry), common).replace(os.sep, "/")
        return f"gatebench validate {shlex.quote(shown)} --entry {shlex.quote(inside)}"

    def _safe_path(self, name: str) -> Path:
        assert self._root is not None
        root = os.path.realpath(self._root)
        real = os.path.realpath(os.path.join(root, name))
        if os.path.commonpath([real, root]) != root:
            raise OutsideBundle("the path (or a symlink on it) leads outside the bundle")
        return Path(real)

    def _too_big(self) -> SpecSyntaxError:
        return SpecSyntaxError(
            [
                Problem(
                    "",
                    f"the description and the files it includes exceed {self.limits.max_bytes:,} "
                    "bytes (raise the limit with --max-bytes)",
                    source=self.label,
                )
            ]
        )


def bundle_from_path(
    path: str | os.PathLike[str], limits: Limits, entry: str | None = None
) -> Bundle:
    p = Path(path)
    if p.is_dir():
        bundle = Bundle(label=str(p), entry="", limits=limits, _root=p)
        bundle.entry = _pick_entry(bundle, entry)
        return bundle
    if not p.exists():
        raise SpecSyntaxError([Problem("", "no such file or folder", source=str(p))])
    size = p.stat().st_size
    if size > limits.max_bytes:
        raise SpecSyntaxError(
            [
                Problem(
                    "",
                    f"the file is {size:,} bytes; the limit is {limits.max_bytes:,} "
                    "(raise it with --max-bytes)",
                    source=str(p),
                )
            ]
        )
    with p.open("rb") as fh:
        head = fh.read(4)
    if head.startswith(b"PK\x03\x04"):
        return bundle_from_bytes(p.name, p.read_bytes(), limits, entry=entry, label=str(p))
    if entry is not None:
        raise SpecSyntaxError(
            [Problem("", "--entry only applies to a folder or a zip", source=str(p))]
        )
    return Bundle(label=str(p), entry=p.name, limits=limits, _root=p.parent, single_file=True)


def bundle_from_bytes(
    name: str,
    data: bytes,
    limits: Limits,
    *,
    entry: str | None = None,
    label: str | None = None,
) -> Bundle:
    """An uploaded object: a zip bundle, or a single document with no siblings."""
    label = label or name
    if len(data) > limits.max_bytes:
        raise SpecSyntaxError(
            [
                Problem(
                    "",
                    f"the upload is {len(data):,} bytes; the limit is {limits.max_bytes:,}",
                    source=label,
                )
            ]
        )
    if entry is not None and not data.startswith(b"PK\x03\x04"):
        raise SpecSyntaxError(
            [Problem("", "an entry only applies to a folder or a zip", source=label)]
        )
    if data.startswith(b"PK\x03\x04"):
        warnings: list[Problem] = []
        files = _unzip(data, limits, label, warnings)
        bundle = Bundle(label=label, entry="", limits=limits, _files=files, warnings=warnings)
        bundle.entry = _pick_entry(bundle, entry)
        return bundle
    safe = posixpath.basename(name.replace("\\", "/")) or "spec"
    return Bundle(label=label, entry=safe, limits=limits, _files={safe: data})


def _unzip(data: bytes, limits: Limits, label: str, warnings: list[Problem]) -> dict[str, bytes]:
    """The members of a zip by name. Names are data: messages show them escaped (``!r``).
    Backslashes are folder separators (older Windows zip tools write ``paths\\a.yaml``);
    a name written twice is read from its later member, with a warning."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        infos = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise SpecSyntaxError(
            [Problem("", f"not a readable zip archive: {exc}", source=label)]
        ) from None
    files: dict[str, bytes] = {}
    total = 0
    for info in infos:
        name = info.filename.replace("\\", "/")
        if (
            name.endswith("/")
            or name.startswith("__MACOSX/")
            or posixpath.basename(name).startswith("._")
        ):
            continue
        shown = info.filename
        mode = info.external_attr >> 16
        if stat.S_ISLNK(mode):
            raise SpecSyntaxError(
                [
                    Problem(
                        "", f"zip entry {shown!r} is a symlink; symlinks are refused", source=label
                    )
                ]
            )
        try:
            clean = join_inside("x", name)
        except OutsideBundle:
            raise SpecSyntaxError(
                [Problem("", f"zip entry {shown!r} points outside the archive", source=label)]
            ) from None
        if info.flag_bits & _ENCRYPTED:
            raise SpecSyntaxError(
                [
                    Problem(
                        "",
                        f"zip entry {shown!r} is encrypted; gatebench reads no password-protected "
                        "archive: zip the files again without a password",
                        source=label,
                    )
                ]
            )
        if len(files) >= limits.max_files:
            raise SpecSyntaxError(
                [Problem("", f"the zip holds more than {limits.max_files} files", source=label)]
            )
        try:
            with archive.open(info) as fh:
                content = fh.read(limits.max_bytes - total + 1)
        except (zipfile.BadZipFile, OSError, ValueError, NotImplementedError, RuntimeError) as exc:
            raise SpecSyntaxError(
                [Problem("", f"zip entry {shown!r} cannot be read: {exc}", source=label)]
            ) from None
        total += len(content)
        if total > limits.max_bytes:
            raise SpecSyntaxError(
                [
                    Problem(
                        "", f"the zip unpacks to more than {limits.max_bytes:,} bytes", source=label
                    )
                ]
            )
        if clean in files:
            warnings.append(
                Problem(
                    "",
                    f"the zip holds {clean!r} twice; the later one is read",
                    "warning",
                    source=label,
                )
            )
        files[clean] = content
    if not files:
        raise SpecSyntaxError([Problem("", "the zip archive is empty", source=label)])
    return _strip_common_folder(files)


def _strip_common_folder(files: dict[str, bytes]) -> dict[str, bytes]:
    """``api/openapi.yaml, api/x.yaml`` → ``openapi.yaml, x.yaml`` (zips of a folder)."""
    firsts = {n.split("/", 1)[0] for n in files}
    if len(firsts) == 1 and all("/" in n for n in files):
        prefix = next(iter(firsts)) + "/"
        return {n[len(prefix) :]: v for n, v in files.items()}
    return files


def _pick_entry(bundle: Bundle, entry: str | None) -> str:
    names = [n for n in bundle.names() if n.lower().endswith(SPEC_SUFFIXES)]
    if entry is not None:
        try:
            clean = join_inside("x", unquote(entry))
        except OutsideBundle as exc:
            raise SpecSyntaxError(
                [Problem("", f"entry {entry!r}: {exc}", source=bundle.label)]
            ) from None
        try:
            found = bundle.exists(clean)
        except OutsideBundle as exc:
            raise SpecSyntaxError(
                [Problem("", f"entry {entry!r}: {exc}", source=bundle.label)]
            ) from None
        if not found:
            raise SpecSyntaxError(
                [
                    Problem(
                        "",
                        f"entry {entry!r} is not in the bundle; it holds: {', '.join(names[:20])}",
                        source=bundle.label,
                    )
                ]
            )
        return clean
    roots: list[str] = []
    benches: list[str] = []
    for name in names:
        try:
            head = bundle.read(name)[:8192]
        except (OSError, OutsideBundle):
            continue
        if _ROOT_HINT.search(head):
            roots.append(name)
        elif _BENCH_HINT.search(head):
            benches.append(name)
    if len(benches) == 1:
        return benches[0]
    if len(roots) == 1:
        return roots[0]
    if not roots:
        raise SpecSyntaxError(
            [
                Problem(
                    "",
                    "no API description found (a file with 'openapi:', 'swagger:' or a "
                    "'#%RAML 1.0' header)",
                    source=bundle.label,
                )
            ]
        )
    preferred = [
        n
        for n in roots
        if posixpath.basename(n).split(".")[0].lower() in ("openapi", "swagger", "api")
    ]
    top = [n for n in preferred if "/" not in n]
    if len(top) == 1:
        return top[0]
    raise SpecSyntaxError(
        [
            Problem(
                "",
                f"several API descriptions in the bundle ({', '.join(roots[:10])}); name one "
                "with --entry (an upload: the 'entry' parameter)",
                source=bundle.label,
            )
        ]
    )
