"""A small PNG writer (RGB, 8 bits, zlib) with a canvas, a 5x7 bitmap font and two charts:
grouped bars with a min-max whisker, and a heat map. Standard library only."""

from __future__ import annotations

import struct
import zlib
from typing import Dict, List, Optional, Sequence, Tuple

RGB = Tuple[int, int, int]
WHITE: RGB = (255, 255, 255)
BLACK: RGB = (0, 0, 0)
GREY: RGB = (200, 200, 200)
# one colour per phase: before, after, reverted (then repeated)
PALETTE: List[RGB] = [(120, 120, 120), (31, 119, 180), (255, 127, 14), (44, 160, 44)]

# 5x7 glyphs, one int per row, bit 4 = leftmost column. Lower case is drawn as upper case.
_FONT: Dict[str, Tuple[int, ...]] = {
    " ": (0, 0, 0, 0, 0, 0, 0),
    "0": (14, 17, 19, 21, 25, 17, 14), "1": (4, 12, 4, 4, 4, 4, 14), "2": (14, 17, 1, 2, 4, 8, 31),
    "3": (31, 2, 4, 2, 1, 17, 14), "4": (2, 6, 10, 18, 31, 2, 2), "5": (31, 16, 30, 1, 1, 17, 14),
    "6": (6, 8, 16, 30, 17, 17, 14), "7": (31, 1, 2, 4, 8, 8, 8), "8": (14, 17, 17, 14, 17, 17, 14),
    "9": (14, 17, 17, 15, 1, 2, 12),
    "A": (14, 17, 17, 31, 17, 17, 17), "B": (30, 17, 17, 30, 17, 17, 30), "C": (14, 17, 16, 16, 16, 17, 14),
    "D": (28, 18, 17, 17, 17, 18, 28), "E": (31, 16, 16, 30, 16, 16, 31), "F": (31, 16, 16, 30, 16, 16, 16),
    "G": (14, 17, 16, 23, 17, 17, 15), "H": (17, 17, 17, 31, 17, 17, 17), "I": (14, 4, 4, 4, 4, 4, 14),
    "J": (7, 2, 2, 2, 2, 18, 12), "K": (17, 18, 20, 24, 20, 18, 17), "L": (16, 16, 16, 16, 16, 16, 31),
    "M": (17, 27, 21, 21, 17, 17, 17), "N": (17, 17, 25, 21, 19, 17, 17), "O": (14, 17, 17, 17, 17, 17, 14),
    "P": (30, 17, 17, 30, 16, 16, 16), "Q": (14, 17, 17, 17, 21, 18, 13), "R": (30, 17, 17, 30, 20, 18, 17),
    "S": (15, 16, 16, 14, 1, 1, 30), "T": (31, 4, 4, 4, 4, 4, 4), "U": (17, 17, 17, 17, 17, 17, 14),
    "V": (17, 17, 17, 17, 17, 10, 4), "W": (17, 17, 17, 21, 21, 21, 10), "X": (17, 17, 10, 4, 10, 17, 17),
    "Y": (17, 17, 17, 10, 4, 4, 4), "Z": (31, 1, 2, 4, 8, 16, 31),
    ".": (0, 0, 0, 0, 0, 12, 12), ",": (0, 0, 0, 0, 12, 4, 8), ":": (0, 12, 12, 0, 12, 12, 0),
    "-": (0, 0, 0, 31, 0, 0, 0), "+": (0, 4, 4, 31, 4, 4, 0), "_": (0, 0, 0, 0, 0, 0, 31),
    "/": (1, 1, 2, 4, 8, 16, 16), "%": (24, 25, 2, 4, 8, 19, 3), "(": (2, 4, 8, 8, 8, 4, 2),
    ")": (8, 4, 2, 2, 2, 4, 8), "=": (0, 0, 31, 0, 31, 0, 0), "<": (2, 4, 8, 16, 8, 4, 2),
    ">": (8, 4, 2, 1, 2, 4, 8), "?": (14, 17, 1, 2, 4, 0, 4), "#": (10, 10, 31, 10, 31, 10, 10),
}
GLYPH_W = 6   # 5 columns and one of space
GLYPH_H = 8


def encode_png(width: int, height: int, rows: Sequence[bytes]) -> bytes:
    """PNG bytes of an RGB image given as `height` rows of 3*`width` bytes."""
    if width <= 0 or height <= 0 or len(rows) != height or any(len(r) != 3 * width for r in rows):
        raise ValueError("encode_png: rows do not match the size")
    raw = b"".join(b"\x00" + bytes(r) for r in rows)   # filter type 0 on every row

    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def decode_png(data: bytes) -> Tuple[int, int, List[bytes]]:
    """The inverse of encode_png for its own output (8-bit RGB, filter 0): for tests and checks."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, width, height = 8, b"", 0, 0
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        tag, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])
        if zlib.crc32(tag + body) & 0xFFFFFFFF != crc:
            raise ValueError(f"bad CRC in {tag!r}")
        if tag == b"IHDR":
            width, height, depth, colour, _, _, _ = struct.unpack(">IIBBBBB", body)
            if (depth, colour) != (8, 2):
                raise ValueError("only 8-bit RGB")
        elif tag == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = 3 * width + 1
    rows = [raw[i * stride + 1:(i + 1) * stride] for i in range(height)]
    if any(raw[i * stride] != 0 for i in range(height)):
        raise ValueError("only filter type 0")
    return width, height, rows


class Canvas:
    def __init__(self, width: int, height: int, background: RGB = WHITE) -> None:
        self.width, self.height = width, height
        self.px = [bytearray(bytes(background) * width) for _ in range(height)]

    def set(self, x: int, y: int, c: RGB) -> None:
        if 0 <= x < self.width and 0 <= y < self.height:
            self.px[y][3 * x:3 * x + 3] = bytes(c)

    def get(self, x: int, y: int) -> RGB:
        r = self.px[y]
        return (r[3 * x], r[3 * x + 1], r[3 * x + 2])

    def rect(self, x0: int, y0: int, x1: int, y1: int, c: RGB) -> None:
        """Fill [x0, x1) x [y0, y1), clipped."""
        x0, x1 = max(0, min(x0, x1)), min(self.width, max(x0, x1))
        y0, y1 = max(0, min(y0, y1)), min(self.height, max(y0, y1))
        if x0 >= x1:
            return
        line = bytes(c) * (x1 - x0)
        for y in range(y0, y1):
            self.px[y][3 * x0:3 * x1] = line

    def text(self, x: int, y: int, s: str, c: RGB = BLACK, scale: int = 1) -> int:
        """Draw `s` with its top left at (x, y); return the width drawn."""
        for i, ch in enumerate(s.upper()):
            glyph = _FONT.get(ch, _FONT["?"])
            for row, bits in enumerate(glyph):
                for col in range(5):
                    if bits & (16 >> col):
                        self.rect(x + (i * GLYPH_W + col) * scale, y + row * scale,
                                  x + (i * GLYPH_W + col + 1) * scale, y + (row + 1) * scale, c)
        return len(s) * GLYPH_W * scale

    def png(self) -> bytes:
        return encode_png(self.width, self.height, [bytes(r) for r in self.px])


def text_width(s: str, scale: int = 1) -> int:
    return len(s) * GLYPH_W * scale


def _fmt(v: float) -> str:
    a = abs(v)
    if a >= 100:
        return f"{v:.0f}"
    if a >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


def bar_chart(title: str, unit: str, groups: Sequence[str], series: Sequence[str],
              values: Sequence[Sequence[Optional[Tuple[float, float, float]]]]) -> bytes:
    """Grouped bars: values[g][s] = (median, min, max) of series s in group g, or None.
    Each bar is the median, with a black whisker from min to max and its median printed on top."""
    bar_w, gap = 26, 22
    left, top, bottom = 60, 34, 44
    group_w = [max(len(series) * bar_w, text_width(g)) for g in groups]
    plot_w = max(sum(group_w) + gap * (len(groups) + 1), text_width(title) + 20 - left, 280)
    width, height = left + plot_w + 10, top + 200 + bottom
    cv = Canvas(width, height)
    cv.text(10, 8, title)
    cv.text(10, 20, unit, (90, 90, 90))
    hi = max([t[2] for g in values for t in g if t is not None] + [0.0])
    scale = 1.0 if hi <= 0 else hi * 1.1
    y0, plot_h = top + 200, 200

    def ypix(v: float) -> int:
        return y0 - int(round(plot_h * max(0.0, v) / scale))

    for k in range(5):     # horizontal grid lines with their values
        v = scale * k / 4
        y = ypix(v)
        cv.rect(left, y, left + plot_w, y + 1, GREY)
        label = _fmt(v)
        cv.text(left - 4 - text_width(label), y - 3, label)
    cv.rect(left, top, left + 1, y0 + 1, BLACK)
    x = left + gap
    for gi, group in enumerate(groups):
        gx = x
        x += (group_w[gi] - len(series) * bar_w) // 2
        for si in range(len(series)):
            t = values[gi][si] if si < len(values[gi]) else None
            if t is not None:
                med, lo, hi_v = t
                cv.rect(x, ypix(med), x + bar_w, y0, PALETTE[si % len(PALETTE)])
                mid = x + bar_w // 2
                cv.rect(mid - 1, ypix(hi_v), mid + 2, ypix(lo) + 1, BLACK)
                cv.rect(mid - 5, ypix(hi_v), mid + 6, ypix(hi_v) + 2, BLACK)
                cv.rect(mid - 5, ypix(lo) - 1, mid + 6, ypix(lo) + 1, BLACK)
                label = _fmt(med)
                cv.text(mid - text_width(label) // 2, max(top - 10, ypix(hi_v) - 10), label)
            x += bar_w
        cv.text(gx + group_w[gi] // 2 - text_width(group) // 2, y0 + 6, group)
        x = gx + group_w[gi] + gap
    lx = left
    for si, s in enumerate(series):   # legend
        cv.rect(lx, height - 16, lx + 10, height - 6, PALETTE[si % len(PALETTE)])
        lx += 14 + cv.text(lx + 14, height - 15, s) + 10
    return cv.png()


def heat_colour(v: float, hi: float) -> RGB:
    """White (0) through yellow to dark red (hi)."""
    f = 0.0 if hi <= 0 else max(0.0, min(1.0, v / hi))
    if f < 0.5:
        g = f * 2
        return (255, 255, int(round(255 * (1 - g))))
    g = (f - 0.5) * 2
    return (int(round(255 - 100 * g)), int(round(255 * (1 - g))), 0)


def heat_map(title: str, rows: Sequence[str], columns: Sequence[str], values: Sequence[Sequence[float]]) -> bytes:
    """values[r][c] as cells from white (0) to dark red (the largest value), each cell with its
    value printed when it fits; row labels on the left, column labels on top."""
    cell_w, cell_h = 54, 16
    label_w = max([text_width(r) for r in rows] + [40]) + 10
    top = 40
    width = max(label_w + cell_w * len(columns) + 10, text_width(title) + 20)
    height = top + cell_h * len(rows) + 24
    cv = Canvas(width, height)
    cv.text(10, 8, title)
    hi = max([v for r in values for v in r] + [0.0])
    for ci, col in enumerate(columns):
        x = label_w + ci * cell_w
        cv.text(x + cell_w // 2 - text_width(col) // 2, top - 12, col)
    for ri, row in enumerate(rows):
        y = top + ri * cell_h
        cv.text(4, y + 4, row)
        for ci in range(len(columns)):
            v = values[ri][ci] if ci < len(values[ri]) else 0.0
            x = label_w + ci * cell_w
            col_rgb = heat_colour(v, hi)
            cv.rect(x, y, x + cell_w - 1, y + cell_h - 1, col_rgb)
            label = _fmt(v)
            if text_width(label) < cell_w - 2:
                ink = WHITE if sum(col_rgb) < 300 else BLACK
                cv.text(x + cell_w // 2 - text_width(label) // 2, y + 4, label, ink)
    cv.text(10, height - 14, f"0 (WHITE) TO {_fmt(hi)} (DARK RED)", (90, 90, 90))
    return cv.png()
