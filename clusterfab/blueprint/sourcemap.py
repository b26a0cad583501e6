"""Where a part of a (possibly merged) blueprint is written in its file.

Findings name a field of the blueprint the user means (`node_groups[0].count`) and point at the text
that sets it. For a plain blueprint that is the path itself; for a blueprint merged with an
environment overlay, values may come from the overlay (`environments.dev.node_groups[0].count`), so
the merge records which paths it replaced and which mappings it touched.
"""

from __future__ import annotations

from collections.abc import Mapping

from clusterfab.blueprint.loader import Document, Span
from clusterfab.core.codes import code_info
from clusterfab.core.findings import FieldPath, Finding, render_path


class SourceMap:
    """Resolves blueprint paths to file positions and builds positioned findings."""

    def __init__(
        self,
        document: Document,
        replaced: Mapping[FieldPath, FieldPath] | None = None,
        touched: Mapping[FieldPath, FieldPath] | None = None,
        kept: Mapping[FieldPath, list[int]] | None = None,
    ) -> None:
        self.document = document
        self.replaced = dict(replaced or {})
        """Merged path -> source path, for values the overlay supplied whole."""
        self.touched = dict(touched or {})
        """Merged path -> source path, for mappings the overlay merged into."""
        self.kept = dict(kept or {})
        """List path -> the indexes of its items that are left, when validation left some out."""

    def renumbered(self, kept: Mapping[FieldPath, list[int]]) -> SourceMap:
        """This map for a blueprint that lacks some list items (`kept`: list path -> the indexes left):
        paths are numbered as the shorter lists are and point where their items are written."""
        return SourceMap(self.document, self.replaced, self.touched, kept)

    def original(self, path: FieldPath) -> FieldPath:
        """`path` numbered as the lists are written (undoes `renumbered`)."""
        if not self.kept:
            return path
        out: list[str | int] = []
        for segment in path:
            indexes = self.kept.get(tuple(out)) if isinstance(segment, int) else None
            if indexes is not None and isinstance(segment, int) and 0 <= segment < len(indexes):
                out.append(indexes[segment])
            else:
                out.append(segment)
        return tuple(out)

    def _exact(self, path: FieldPath, at_key: bool) -> Span | None:
        doc = self.document
        if at_key:
            return doc.key_spans.get(path) or doc.value_spans.get(path)
        return doc.value_spans.get(path) or doc.key_spans.get(path)

    def source_path(self, path: FieldPath) -> FieldPath:
        """The path in the file that holds `path`, or the deepest written place that stands for it."""
        path = self.original(path)
        for cut in range(len(path), -1, -1):
            prefix = path[:cut]
            if prefix in self.replaced:
                return self.replaced[prefix] + path[cut:]
        # Not supplied by the overlay: the base holds it unless it is missing altogether, in which
        # case the deepest mapping the overlay touched is where the user last wrote about it.
        base_depth = max(
            (cut for cut in range(len(path), -1, -1) if self._exact(path[:cut], False) is not None),
            default=-1,
        )
        touched_depth = max(
            (cut for cut in range(len(path), -1, -1) if path[:cut] in self.touched), default=-1
        )
        if touched_depth > base_depth:
            return self.touched[path[:touched_depth]] + path[touched_depth:]
        return path

    def from_overlay(self, path: FieldPath, environment: str) -> bool:
        """Whether `environment`'s overlay, not the base, writes the value at `path`."""
        return self.source_path(path)[:2] == ("environments", environment)

    def locate(self, path: FieldPath, *, at_key: bool = False) -> Span | None:
        source = self.source_path(path)
        for cut in range(len(source), -1, -1):
            span = self._exact(source[:cut], at_key and cut == len(source))
            if span is not None:
                return span
        return None

    def finding(
        self,
        code: str,
        path: FieldPath,
        message: str,
        *,
        hint: str = "",
        at_key: bool = False,
        anchor: FieldPath | None = None,
    ) -> Finding:
        """A finding about the field `path`, positioned at `anchor` (default: the field itself)."""
        span = self.locate(anchor if anchor is not None else path, at_key=at_key)
        path = self.original(path)
        line = span.line if span else 0
        column = span.column if span else 0
        end = span.end_column if span and span.end_line == span.line else 0
        return Finding(
            code=code,
            severity=code_info(code).severity,
            message=message,
            field=render_path(path),
            file=self.document.file,
            line=line,
            column=column,
            hint=hint,
            end_column=end,
            path=path,
        )
