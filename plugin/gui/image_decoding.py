# License: GPLv3 Copyright: the Book AI developers
"""Images decoded by Book AI itself, with Qt, in calibre's worker process; and what the windows
make of the result.

decode_in_worker() is what core.images.decode_images() runs through core.isolated.run(): never in
calibre's own process. Each image is checked again (core.images.structure()), then read by Qt's
reader for the type its bytes say it is (never another: a PNG is not read as SVG or XPM because
Qt would guess so), at the size it is needed (a JPEG's decoder scales while it decodes), turned
upright (its EXIF orientation), its transparency laid on white; then written as a new baseline
JPEG for the library (when a cover is wanted) and as rows of RGB pixels at most `side` a side for
the windows. What comes back is plain data: bytes and numbers.

qimage() is the windows' side: a QImage made from those rows, on the GUI thread, with no decoder
at all (a copy of bytes Book AI made).
"""

from typing import TYPE_CHECKING

from calibre_plugins.bookai.core.errors import ProviderError
from calibre_plugins.bookai.core.images import Pixels, structure

if TYPE_CHECKING:
    from qt.core import QImage

load_translations()

ALLOCATION_MB = 256  # the most Qt's readers may allocate for one image (calibre's own default is 128)
QT_FORMATS = {'image/png': b'png', 'image/jpeg': b'jpeg', 'image/gif': b'gif', 'image/webp': b'webp'}


def fit(width: int, height: int, most_width: int, most_height: int) -> tuple[int, int]:
    """width x height scaled down, keeping its shape, to fit in most_width x most_height."""
    scale = min(1.0, most_width / width, most_height / height)
    return max(1, round(width * scale)), max(1, round(height * scale))


def decode_in_worker(jobs: list[tuple[bytes, str]], cover_box: tuple[int, int] | None, side: int,
                     quality: int) -> list[dict]:
    """In calibre's worker: for each (bytes, name in a sentence) a dict: 'problem' (a sentence,
    '' when decoded), 'jpeg' (the new baseline JPEG at most cover_box, when cover_box is given),
    'width' and 'height' (the JPEG's), 'pixels' ((width, height, bytes a row, RGB rows) at most
    side a side, when side > 0)."""
    from calibre_plugins.bookai.core import isolated  # on use: it imports calibre's worker machinery
    isolated.bounded_here()
    from qt.core import QImageReader
    if hasattr(QImageReader, 'setAllocationLimit'):  # Qt 6
        QImageReader.setAllocationLimit(ALLOCATION_MB)
    jobs = list(reversed(jobs))
    out = []
    while jobs:  # each image's bytes let go of once it is done
        data, name = jobs.pop()
        out.append(decode_one(data, name, cover_box, side, quality))
        del data
    return out


def decode_one(data: bytes, name: str, cover_box: tuple[int, int] | None, side: int, quality: int) -> dict:
    from qt.core import QBuffer, QByteArray, QColor, QImage, QImageReader, QImageWriter, QIODevice, QPainter, QSize, Qt

    try:
        found = structure(data, name)
    except ProviderError as e:
        return {'problem': str(e)}
    box = cover_box or (side, side)
    width, height = fit(found.width, found.height, *box)
    buf = QBuffer()
    buf.setData(QByteArray(data))
    buf.open(QIODevice.OpenModeFlag.ReadOnly)
    reader = QImageReader(buf, QT_FORMATS[found.mime])
    reader.setDecideFormatFromContent(False)
    reader.setAutoTransform(True)
    if (width, height) != (found.width, found.height):
        reader.setScaledSize(QSize(width, height))
    image = reader.read()
    buf.close()
    if image.isNull():
        return {'problem': _('{image} could not be decoded: it is damaged, or of a kind Book AI cannot read '
                             '({why}).').format(image=name, why=reader.errorString())}
    fitted = fit(image.width(), image.height(), *box)  # turned upright, it may fit the box the other way
    if fitted != (image.width(), image.height()):
        image = image.scaled(fitted[0], fitted[1], Qt.AspectRatioMode.IgnoreAspectRatio,
                             Qt.TransformationMode.SmoothTransformation)
    if image.hasAlphaChannel():  # laid on white, as calibre stores a cover
        flat = QImage(image.width(), image.height(), QImage.Format.Format_RGB32)
        flat.fill(QColor(255, 255, 255))
        p = QPainter(flat)
        p.drawImage(0, 0, image)
        p.end()
        image = flat
    image = image.convertToFormat(QImage.Format.Format_RGB32)
    out = {'problem': '', 'jpeg': b'', 'width': image.width(), 'height': image.height(), 'pixels': None}
    if cover_box is not None:
        ba = QByteArray()
        target = QBuffer(ba)
        target.open(QIODevice.OpenModeFlag.WriteOnly)
        writer = QImageWriter(target, b'jpeg')
        writer.setQuality(quality)
        ok = writer.write(image)
        target.close()
        if not ok:
            return {'problem': _('{image} could not be written as a new image ({why}).').format(
                image=name, why=writer.errorString())}
        out['jpeg'] = bytes(ba.data())
    if side > 0:
        small = image
        w, h = fit(image.width(), image.height(), side, side)
        if (w, h) != (image.width(), image.height()):
            small = image.scaled(w, h, Qt.AspectRatioMode.IgnoreAspectRatio, Qt.TransformationMode.SmoothTransformation)
        small = small.convertToFormat(QImage.Format.Format_RGB888)
        out['pixels'] = (small.width(), small.height(), small.bytesPerLine(),
                         bytes(small.constBits().asstring(small.sizeInBytes())))
    return out


def qimage(pixels: Pixels | None) -> 'QImage':
    """The picture in pixels (RGB rows Book AI made) as a QImage of its own; a null QImage for
    none. On the GUI thread: a copy of bytes, no decoder."""
    from qt.core import QImage
    if pixels is None or not pixels.whole:
        return QImage()
    return QImage(pixels.data, pixels.width, pixels.height, pixels.stride, QImage.Format.Format_RGB888).copy()
