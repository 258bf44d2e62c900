"""Tests for cortado.io, the pycaffe-compatible ``caffe.io`` module.

Every expectation is computed independently of cortado.io: with the protobuf
messages directly, explicit loops or literals, numpy slicing, skimage and
scipy.  Run with
    PYTHONPATH=<dir holding the cortado package> python3 -m pytest tests/python/test_io.py
"""

import numpy as np
import pytest
import scipy.ndimage
import skimage.io
import skimage.transform

from cortado import io as caffe_io
from cortado.proto import caffe_pb2


# ---------------------------------------------------------------------------
# BlobProto / BlobProtoVector
# ---------------------------------------------------------------------------

@pytest.mark.parametrize('shape', [(2, 3, 4, 5), (7,), (3, 5), (2, 1, 3, 2, 2),
                                   (1, 1, 1, 1)])
def test_blobproto_round_trip(shape):
    rng = np.random.RandomState(0)
    arr = rng.randn(*shape).astype(np.float32)
    diff = rng.randn(*shape).astype(np.float32)

    blob = caffe_io.array_to_blobproto(arr, diff)
    assert isinstance(blob, caffe_pb2.BlobProto)
    assert list(blob.shape.dim) == list(shape)
    # The legacy 4-d fields stay unset: the N-d shape is authoritative.
    for f in ('num', 'channels', 'height', 'width'):
        assert not blob.HasField(f)
    np.testing.assert_array_equal(np.array(blob.data, dtype=np.float32),
                                  arr.ravel())
    np.testing.assert_array_equal(np.array(blob.diff, dtype=np.float32),
                                  diff.ravel())

    # Through the wire format and back.
    parsed = caffe_pb2.BlobProto()
    parsed.ParseFromString(blob.SerializeToString())
    data = caffe_io.blobproto_to_array(parsed)
    grad = caffe_io.blobproto_to_array(parsed, return_diff=True)
    assert data.shape == shape and grad.shape == shape
    assert data.dtype == np.float64 and grad.dtype == np.float64
    np.testing.assert_array_equal(data, arr)
    np.testing.assert_array_equal(grad, diff)


def test_array_to_blobproto_without_diff_and_float64_input():
    arr = np.arange(24, dtype=np.float64).reshape(2, 3, 4) / 8.0
    blob = caffe_io.array_to_blobproto(arr)
    assert len(blob.diff) == 0
    assert list(blob.data) == [i / 8.0 for i in range(24)]
    np.testing.assert_array_equal(caffe_io.blobproto_to_array(blob), arr)


def test_array_to_blobproto_integer_input():
    arr = np.arange(6, dtype=np.int32).reshape(1, 2, 3)
    out = caffe_io.blobproto_to_array(caffe_io.array_to_blobproto(arr))
    np.testing.assert_array_equal(out, arr.astype(float))


def test_blobproto_to_array_legacy_4d_shape():
    # A Caffe-1 style blob: num/channels/height/width, no `shape`.
    blob = caffe_pb2.BlobProto()
    blob.num, blob.channels, blob.height, blob.width = 2, 1, 2, 3
    blob.data.extend(range(12))
    blob.diff.extend(range(100, 112))
    expect = np.arange(12, dtype=float).reshape(2, 1, 2, 3)
    np.testing.assert_array_equal(caffe_io.blobproto_to_array(blob), expect)
    np.testing.assert_array_equal(
        caffe_io.blobproto_to_array(blob, return_diff=True), expect + 100)

    # Legacy fields win over `shape` when both are present (as in pycaffe).
    blob.shape.dim.extend([12])
    assert caffe_io.blobproto_to_array(blob).shape == (2, 1, 2, 3)


def test_blobproto_to_array_only_some_legacy_fields():
    # Setting any one legacy field selects the legacy shape (others are 0).
    blob = caffe_pb2.BlobProto()
    blob.num = 0
    assert caffe_io.blobproto_to_array(blob).shape == (0, 0, 0, 0)


def test_blobprotovector_str_round_trip():
    rng = np.random.RandomState(1)
    arrays = [rng.rand(1, 3, 2, 2).astype(np.float32),
              rng.rand(5).astype(np.float32),
              rng.rand(2, 3).astype(np.float32)]
    s = caffe_io.arraylist_to_blobprotovector_str(arrays)
    assert isinstance(s, bytes)

    # Independent parse with the generated message class.
    vec = caffe_pb2.BlobProtoVector()
    vec.ParseFromString(s)
    assert len(vec.blobs) == 3
    for blob, arr in zip(vec.blobs, arrays):
        assert list(blob.shape.dim) == list(arr.shape)
        np.testing.assert_array_equal(np.array(blob.data, np.float32),
                                      arr.ravel())

    back = caffe_io.blobprotovector_str_to_arraylist(s)
    assert len(back) == 3
    for got, arr in zip(back, arrays):
        assert got.shape == arr.shape
        np.testing.assert_array_equal(got, arr)


def test_blobprotovector_pycaffe_spelling():
    # pycaffe names the function arraylist_to_blobprotovecor_str (sic).
    arrays = [np.ones((1, 1, 2, 2), np.float32)]
    assert (caffe_io.arraylist_to_blobprotovecor_str(arrays)
            == caffe_io.arraylist_to_blobprotovector_str(arrays))


def test_blobprotovector_empty():
    s = caffe_io.arraylist_to_blobprotovector_str([])
    assert caffe_io.blobprotovector_str_to_arraylist(s) == []


# ---------------------------------------------------------------------------
# Datum
# ---------------------------------------------------------------------------

def test_array_to_datum_uint8():
    arr = np.arange(2 * 3 * 4, dtype=np.uint8).reshape(2, 3, 4) * 7
    datum = caffe_io.array_to_datum(arr, label=5)
    assert isinstance(datum, caffe_pb2.Datum)
    assert (datum.channels, datum.height, datum.width) == (2, 3, 4)
    assert datum.data == bytes(bytearray(arr.ravel().tolist()))
    assert len(datum.float_data) == 0
    assert datum.label == 5

    parsed = caffe_pb2.Datum()
    parsed.ParseFromString(datum.SerializeToString())
    back = caffe_io.datum_to_array(parsed)
    assert back.dtype == np.uint8 and back.shape == (2, 3, 4)
    np.testing.assert_array_equal(back, arr)
    back[0, 0, 0] = 1  # a writable array, like pycaffe's np.fromstring copy


def test_array_to_datum_float():
    arr = (np.arange(12, dtype=np.float32).reshape(3, 2, 2) - 4) / 4
    datum = caffe_io.array_to_datum(arr)
    assert (datum.channels, datum.height, datum.width) == (3, 2, 2)
    assert datum.data == b''
    assert list(datum.float_data) == [(i - 4) / 4 for i in range(12)]
    # label not given -> left unset
    assert not datum.HasField('label')
    assert datum.label == 0

    back = caffe_io.datum_to_array(datum)
    assert back.dtype == np.float64 and back.shape == (3, 2, 2)
    np.testing.assert_array_equal(back, arr)


def test_array_to_datum_non_uint8_integers_go_to_float_data():
    arr = np.arange(4, dtype=np.int32).reshape(1, 2, 2)
    datum = caffe_io.array_to_datum(arr, label=np.int64(3))
    assert datum.data == b''
    assert list(datum.float_data) == [0.0, 1.0, 2.0, 3.0]
    assert datum.label == 3


def test_array_to_datum_label_zero_is_set():
    datum = caffe_io.array_to_datum(np.zeros((1, 1, 1), np.uint8), label=0)
    assert datum.HasField('label') and datum.label == 0


@pytest.mark.parametrize('shape', [(2, 2), (1, 1, 2, 2), (4,)])
def test_array_to_datum_rejects_non_3d(shape):
    with pytest.raises(ValueError):
        caffe_io.array_to_datum(np.zeros(shape, np.uint8))


def test_datum_to_array_handwritten_datum():
    datum = caffe_pb2.Datum(channels=1, height=2, width=2,
                            data=b'\x00\x01\xfe\xff', label=9)
    np.testing.assert_array_equal(caffe_io.datum_to_array(datum),
                                  [[[0, 1], [254, 255]]])


# ---------------------------------------------------------------------------
# Transformer
# ---------------------------------------------------------------------------

def _image_2x2x3():
    # img[h, w, k] = 0.1*(k+1) + 0.01*(2*h + w): channel k in tenths,
    # position in hundredths.
    img = np.zeros((2, 2, 3), np.float32)
    for h in range(2):
        for w in range(2):
            for k in range(3):
                img[h, w, k] = 0.1 * (k + 1) + 0.01 * (2 * h + w)
    return img


def test_transformer_transpose_only():
    t = caffe_io.Transformer({'data': (1, 3, 2, 2)})
    t.set_transpose('data', (2, 0, 1))
    img = _image_2x2x3()
    out = t.preprocess('data', img)
    assert out.shape == (3, 2, 2) and out.dtype == np.float32
    expect = [[[0.10, 0.11], [0.12, 0.13]],
              [[0.20, 0.21], [0.22, 0.23]],
              [[0.30, 0.31], [0.32, 0.33]]]
    np.testing.assert_allclose(out, expect, rtol=0, atol=1e-6)


def test_transformer_full_pipeline_per_channel_mean():
    t = caffe_io.Transformer({'data': (1, 3, 2, 2)})
    t.set_transpose('data', (2, 0, 1))
    t.set_channel_swap('data', (2, 1, 0))          # RGB -> BGR
    t.set_raw_scale('data', 100.0)
    t.set_mean('data', np.array([30.0, 20.0, 10.0]))  # per (swapped) channel
    t.set_input_scale('data', 0.5)
    out = t.preprocess('data', _image_2x2x3())
    # channel 0 <- image channel 2 (0.3x * 100 - 30) * 0.5, etc.
    expect = [[[0.0, 0.5], [1.0, 1.5]],
              [[0.0, 0.5], [1.0, 1.5]],
              [[0.0, 0.5], [1.0, 1.5]]]
    np.testing.assert_allclose(out, expect, rtol=0, atol=1e-4)


def test_transformer_full_mean_and_order_of_operations():
    t = caffe_io.Transformer({'data': (1, 3, 2, 2)})
    t.set_transpose('data', (2, 0, 1))
    t.set_channel_swap('data', (1, 2, 0))
    t.set_raw_scale('data', 255.0)
    mean = np.arange(12, dtype=np.float64).reshape(3, 2, 2)
    t.set_mean('data', mean)
    t.set_input_scale('data', 0.25)
    img = _image_2x2x3()
    out = t.preprocess('data', img)
    swap = (1, 2, 0)
    expect = np.zeros((3, 2, 2))
    for c in range(3):
        for h in range(2):
            for w in range(2):
                expect[c, h, w] = (img[h, w, swap[c]] * 255.0
                                   - mean[c, h, w]) * 0.25
    np.testing.assert_allclose(out, expect, rtol=1e-6, atol=1e-5)
    assert out.dtype == np.float32


def test_transformer_two_dim_mean_for_single_channel_input():
    t = caffe_io.Transformer({'gray': (1, 1, 2, 3)})
    t.set_transpose('gray', (2, 0, 1))
    t.set_mean('gray', np.ones((2, 3)))
    img = np.arange(6, dtype=np.float32).reshape(2, 3, 1)
    out = t.preprocess('gray', img)
    np.testing.assert_array_equal(out, img.transpose(2, 0, 1) - 1)


def test_transformer_no_settings_only_casts():
    t = caffe_io.Transformer({'data': (1, 2, 3, 2)})
    img = np.arange(12, dtype=np.uint8).reshape(3, 2, 2)
    out = t.preprocess('data', img)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, img)


def test_transformer_preprocess_resizes_to_input_dims():
    t = caffe_io.Transformer({'data': (1, 3, 4, 6)})
    t.set_transpose('data', (2, 0, 1))
    img = np.random.RandomState(2).rand(8, 3, 3).astype(np.float32)
    out = t.preprocess('data', img)
    assert out.shape == (3, 4, 6)
    np.testing.assert_allclose(
        out, caffe_io.resize_image(img, (4, 6)).transpose(2, 0, 1),
        rtol=0, atol=1e-6)


def test_transformer_preprocess_leaves_input_untouched():
    t = caffe_io.Transformer({'data': (1, 3, 2, 2)})
    t.set_transpose('data', (2, 0, 1))
    t.set_raw_scale('data', 255.0)
    t.set_mean('data', np.array([1.0, 2.0, 3.0]))
    img = _image_2x2x3()
    before = img.copy()
    t.preprocess('data', img)
    np.testing.assert_array_equal(img, before)


@pytest.mark.parametrize('with_mean', ['channel', 'full', None])
def test_transformer_deprocess_inverts_preprocess(with_mean):
    rng = np.random.RandomState(3)
    t = caffe_io.Transformer({'data': (1, 3, 5, 4)})
    t.set_transpose('data', (2, 0, 1))
    t.set_channel_swap('data', (2, 0, 1))  # not self-inverse
    t.set_raw_scale('data', 255.0)
    if with_mean == 'channel':
        t.set_mean('data', np.array([104.0, 117.0, 123.0]))
    elif with_mean == 'full':
        t.set_mean('data', rng.rand(3, 5, 4) * 100)
    t.set_input_scale('data', 0.017)
    img = rng.rand(5, 4, 3).astype(np.float32)
    blob = t.preprocess('data', img)
    np.testing.assert_allclose(t.deprocess('data', blob), img, atol=1e-5)
    # A (1, K, H, W) batch is squeezed first.
    np.testing.assert_allclose(t.deprocess('data', blob[np.newaxis]), img,
                               atol=1e-5)


def test_transformer_errors():
    t = caffe_io.Transformer({'data': (1, 3, 4, 4)})
    with pytest.raises(KeyError, match="no input named 'label'"):
        t.preprocess('label', np.zeros((4, 4, 3)))
    with pytest.raises(KeyError, match="no input named 'nope'"):
        t.set_raw_scale('nope', 1.0)
    with pytest.raises(ValueError, match='Transpose order'):
        t.set_transpose('data', (1, 0))
    with pytest.raises(ValueError, match='Channel swap'):
        t.set_channel_swap('data', (1, 0))
    with pytest.raises(ValueError, match='Mean channels incompatible'):
        t.set_mean('data', np.zeros(4))
    with pytest.raises(ValueError, match='Mean shape invalid'):
        t.set_mean('data', np.zeros((1, 3, 4, 4)))
    with pytest.raises(ValueError, match='Mean shape incompatible'):
        t.set_mean('data', np.zeros((3, 5, 4)))
    with pytest.raises(ValueError, match='Mean shape incompatible'):
        t.set_mean('data', np.zeros((4, 4)))   # read as 1 x 4 x 4
    # nothing was recorded by the failed calls
    assert t.transpose == {} and t.channel_swap == {} and t.mean == {}


def test_transformer_set_mean_per_channel_is_broadcast():
    t = caffe_io.Transformer({'data': (1, 3, 4, 4)})
    t.set_mean('data', np.array([1.0, 2.0, 3.0]))
    assert t.mean['data'].shape == (3, 1, 1)


# ---------------------------------------------------------------------------
# load_image
# ---------------------------------------------------------------------------

def _rgb_u8(h=5, w=4):
    rng = np.random.RandomState(4)
    img = rng.randint(0, 256, size=(h, w, 3)).astype(np.uint8)
    img[0, 0] = (0, 0, 0)
    img[-1, -1] = (255, 255, 255)
    return img


def test_load_image_color(tmp_path):
    rgb = _rgb_u8()
    path = str(tmp_path / 'rgb.png')
    skimage.io.imsave(path, rgb, check_contrast=False)
    img = caffe_io.load_image(path)
    assert img.shape == (5, 4, 3) and img.dtype == np.float32
    assert img.min() >= 0.0 and img.max() <= 1.0
    np.testing.assert_allclose(img, rgb / 255.0, atol=1e-6)


def test_load_image_rgb_as_gray(tmp_path):
    rgb = _rgb_u8()
    path = str(tmp_path / 'rgb.png')
    skimage.io.imsave(path, rgb, check_contrast=False)
    img = caffe_io.load_image(path, color=False)
    assert img.shape == (5, 4, 1) and img.dtype == np.float32
    # ITU-R 709 luma, as skimage.color.rgb2gray
    f = rgb / 255.0
    luma = 0.2125 * f[..., 0] + 0.7154 * f[..., 1] + 0.0721 * f[..., 2]
    np.testing.assert_allclose(img[..., 0], luma, atol=1e-5)
    assert img.min() >= 0.0 and img.max() <= 1.0


def test_load_image_grayscale_file(tmp_path):
    gray = np.arange(12, dtype=np.uint8).reshape(3, 4) * 23
    path = str(tmp_path / 'gray.png')
    skimage.io.imsave(path, gray, check_contrast=False)

    as_gray = caffe_io.load_image(path, color=False)
    assert as_gray.shape == (3, 4, 1) and as_gray.dtype == np.float32
    np.testing.assert_allclose(as_gray[..., 0], gray / 255.0, atol=1e-6)

    as_color = caffe_io.load_image(path, color=True)
    assert as_color.shape == (3, 4, 3) and as_color.dtype == np.float32
    for k in range(3):
        np.testing.assert_allclose(as_color[..., k], gray / 255.0, atol=1e-6)


def test_load_image_rgba_drops_alpha(tmp_path):
    rgb = _rgb_u8()
    alpha = np.full(rgb.shape[:2] + (1,), 128, np.uint8)
    path = str(tmp_path / 'rgba.png')
    skimage.io.imsave(path, np.concatenate([rgb, alpha], axis=2),
                      check_contrast=False)
    img = caffe_io.load_image(path)
    assert img.shape == (5, 4, 3) and img.dtype == np.float32
    np.testing.assert_allclose(img, rgb / 255.0, atol=1e-6)


def test_load_image_16bit(tmp_path):
    gray = (np.arange(6, dtype=np.uint16).reshape(2, 3) * 13107)  # 0..65535
    path = str(tmp_path / 'gray16.png')
    skimage.io.imsave(path, gray, check_contrast=False)
    img = caffe_io.load_image(path, color=False)
    np.testing.assert_allclose(img[..., 0], gray / 65535.0, atol=1e-6)


# ---------------------------------------------------------------------------
# resize_image
# ---------------------------------------------------------------------------

@pytest.mark.parametrize('channels', [1, 3])
@pytest.mark.parametrize('new_dims', [(7, 3), (2, 2), (4, 5)])
def test_resize_image_matches_skimage(channels, new_dims):
    rng = np.random.RandomState(5)
    im = (rng.rand(4, 5, channels) * 50 - 10).astype(np.float32)
    out = caffe_io.resize_image(im, new_dims)
    assert out.shape == new_dims + (channels,)
    assert out.dtype == np.float32
    # pycaffe feeds skimage an image normalised to [0, 1] and maps it back.
    lo, hi = im.min(), im.max()
    ref = skimage.transform.resize((im - lo) / (hi - lo), new_dims, order=1)
    ref = ref * (hi - lo) + lo
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


def test_resize_image_unit_range_is_plain_skimage_resize():
    im = np.random.RandomState(6).rand(6, 6, 3)
    im[0, 0, 0], im[1, 1, 1] = 0.0, 1.0
    out = caffe_io.resize_image(im, (9, 4), interp_order=3)
    ref = skimage.transform.resize(im, (9, 4), order=3)
    np.testing.assert_allclose(out, ref, rtol=0, atol=1e-5)


def test_resize_image_nearest_upsample_repeats_pixels():
    im = np.array([[0., 1.], [2., 3.]]).reshape(2, 2, 1)
    out = caffe_io.resize_image(im, (4, 4), interp_order=0)
    expect = np.array([[0, 0, 1, 1], [0, 0, 1, 1],
                       [2, 2, 3, 3], [2, 2, 3, 3]], np.float32)
    np.testing.assert_allclose(out[..., 0], expect, atol=1e-6)


def test_resize_image_accepts_array_dims():
    im = np.random.RandomState(7).rand(4, 4, 3)
    out = caffe_io.resize_image(im, np.array([6, 2]))
    assert out.shape == (6, 2, 3)


@pytest.mark.parametrize('channels', [1, 3])
def test_resize_image_constant_image(channels):
    im = np.full((3, 4, channels), 7.5, np.float64)
    out = caffe_io.resize_image(im, (5, 2))
    assert out.shape == (5, 2, channels)
    assert out.dtype == np.float32
    assert np.all(out == 7.5)


@pytest.mark.parametrize('channels', [2, 4, 5])
def test_resize_image_other_channel_counts_use_zoom(channels):
    im = np.random.RandomState(8).rand(4, 6, channels).astype(np.float32)
    out = caffe_io.resize_image(im, (8, 3))
    assert out.shape == (8, 3, channels) and out.dtype == np.float32
    ref = scipy.ndimage.zoom(im, (2.0, 0.5, 1), order=1)
    np.testing.assert_allclose(out, ref, atol=1e-6)


# ---------------------------------------------------------------------------
# oversample
# ---------------------------------------------------------------------------

def _crops_by_slicing(im, boxes):
    crops = [im[y0:y1, x0:x1, :] for (y0, y1, x0, x1) in boxes]
    return crops + [c[:, ::-1, :] for c in crops]


def test_oversample_corners_center_mirrors():
    rng = np.random.RandomState(9)
    images = [rng.rand(6, 7, 2).astype(np.float32) for _ in range(2)]
    crops = caffe_io.oversample(images, (3, 4))
    assert crops.shape == (20, 3, 4, 2) and crops.dtype == np.float32
    # (y0, y1, x0, x1): top-left, top-right, bottom-left, bottom-right,
    # center: image center (3, 3.5) -/+ half crop (1.5, 2) = (1.5, 1.5) to
    # (4.5, 5.5), truncated to [1:4, 1:5].
    boxes = [(0, 3, 0, 4), (0, 3, 3, 7), (3, 6, 0, 4), (3, 6, 3, 7),
             (1, 4, 1, 5)]
    for n, im in enumerate(images):
        for i, expect in enumerate(_crops_by_slicing(im, boxes)):
            np.testing.assert_array_equal(crops[10 * n + i], expect)


def test_oversample_ndarray_batch_and_odd_sizes():
    # N x H x W x K array input; odd crop inside even image.
    batch = np.arange(2 * 8 * 8 * 3, dtype=np.float64).reshape(2, 8, 8, 3)
    crops = caffe_io.oversample(batch, (5, 5))
    assert crops.shape == (20, 5, 5, 3)
    # center: 4 -/+ 2.5 = 1.5 .. 6.5 -> [1:6]
    boxes = [(0, 5, 0, 5), (0, 5, 3, 8), (3, 8, 0, 5), (3, 8, 3, 8),
             (1, 6, 1, 6)]
    for n in range(2):
        for i, expect in enumerate(_crops_by_slicing(batch[n], boxes)):
            np.testing.assert_array_equal(crops[10 * n + i], expect)


def test_oversample_crop_equal_to_image():
    im = np.random.RandomState(10).rand(4, 5, 3)
    crops = caffe_io.oversample([im], (4, 5))
    for i in range(5):
        np.testing.assert_allclose(crops[i], im, atol=1e-7)
        np.testing.assert_allclose(crops[5 + i], im[:, ::-1], atol=1e-7)
