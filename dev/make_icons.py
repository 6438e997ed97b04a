#!/usr/bin/env python3
# License: GPLv3 Copyright: the Book AI developers
"""Draw the plugin's icons into plugin/images/: an open book with a spark above it.

    QT_QPA_PLATFORM=offscreen /usr/bin/python3 dev/make_icons.py

bookai.png is for light themes, bookai-for-dark-theme.png for dark ones.
The output is committed; run this only to change the artwork.
"""

import math
import sys
from pathlib import Path

from qt.core import QApplication, QColor, QImage, QPainter, QPainterPath, QPen, QPointF, Qt

SIZE = 128
OUT = Path(__file__).resolve().parent.parent / 'plugin' / 'images'
VARIANTS = {  # name: (pages outline, page fill, spark)
    'bookai.png': ('#2c3e50', '#fdfcf7', '#d35400'),
    'bookai-for-dark-theme.png': ('#e8eef2', '#34495e', '#f5b041'),
}


def spark(cx, cy, r):
    path = QPainterPath()
    pts = []
    for i in range(8):
        rr = r if i % 2 == 0 else r * 0.28
        a = math.pi / 2 + i * math.pi / 4
        pts.append(QPointF(cx + rr * math.cos(a), cy - rr * math.sin(a)))
    path.moveTo(pts[0])
    for p in pts[1:]:
        path.lineTo(p)
    path.closeSubpath()
    return path


def draw(outline, fill, accent):
    img = QImage(SIZE, SIZE, QImage.Format.Format_ARGB32_Premultiplied)
    img.fill(Qt.GlobalColor.transparent)
    p = QPainter(img)
    p.setRenderHint(QPainter.RenderHint.Antialiasing)
    pen = QPen(QColor(outline), 6, Qt.PenStyle.SolidLine, Qt.PenCapStyle.RoundCap, Qt.PenJoinStyle.RoundJoin)
    p.setPen(pen)
    p.setBrush(QColor(fill))
    for sign in (-1, 1):  # the two pages of an open book
        page = QPainterPath()
        page.moveTo(64, 112)
        page.cubicTo(64 + sign * 20, 100, 64 + sign * 40, 100, 64 + sign * 56, 108)
        page.lineTo(64 + sign * 56, 56)
        page.cubicTo(64 + sign * 40, 48, 64 + sign * 20, 48, 64, 60)
        page.closeSubpath()
        p.drawPath(page)
    p.drawLine(QPointF(64, 60), QPointF(64, 112))
    thin = QPen(QColor(outline), 3, Qt.PenStyle.SolidLine, Qt.PenCapStyle.RoundCap)
    p.setPen(thin)
    for sign in (-1, 1):
        for dy in (0, 12, 24):
            p.drawLine(QPointF(64 + sign * 14, 70 + dy), QPointF(64 + sign * 44, 66 + dy))
    p.setPen(Qt.PenStyle.NoPen)
    p.setBrush(QColor(accent))
    p.drawPath(spark(64, 26, 24))
    p.drawPath(spark(100, 22, 10))
    p.end()
    return img


def main():
    app = QApplication(sys.argv[:1])  # noqa: F841 (painting wants an application)
    OUT.mkdir(parents=True, exist_ok=True)
    for name, colors in VARIANTS.items():
        if not draw(*colors).save(str(OUT / name)):
            raise SystemExit(f'could not write {name}')
        print(OUT / name)


if __name__ == '__main__':
    main()
