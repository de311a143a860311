//! Bounded property tests of every reader of a file a user gives: the
//! 3DGS `.ply`, PNG frames and masks, `drivers.safetensors`, the fit's
//! `checkpoint.json` and the TOML scene, truth and interactions files. For
//! any byte string (random, or a valid file cut short, altered or given
//! absurd counts) a reader returns `Ok` or its typed error naming the
//! file; it never panics and never allocates from a count the file cannot
//! back.
//!
//! The runs are deterministic (a fixed seed) and small enough for CI (a
//! few seconds in a debug build); `PROPTEST_RNG_SEED` and `PROPTEST_CASES`
//! run them with another seed or more cases. Inputs that once made a
//! reader panic or hang are kept below as plain example tests.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::path::Path;

use physfit::fit::checkpoint::{Checkpoint, CheckpointError, FitFingerprint, CHECKPOINT_VERSION};
use physfit::interact::Interactions;
use physfit::output::tensor_archive::TensorArchive;
use physfit::output::FittedDrivers;
use physfit::scene::frames::{frame_size, load_frame, FrameError};
use physfit::scene::masks::load_mask;
use physfit::scene::ply::{gaussians_from_ply, PlyData, PlyError};
use physfit::scene::Scene;
use physfit::synth::Truth;
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{Config, RngSeed, TestCaseError, TestRunner};

use crate::common;

/// Runs `test` on `cases` inputs of `strategy` (shrinking a failure to a
/// small input, which the panic message shows).
fn check<S>(
    name: &str,
    cases: u32,
    strategy: S,
    test: impl Fn(S::Value) -> Result<(), TestCaseError>,
) where
    S: Strategy,
    S::Value: Debug,
{
    let mut config = Config {
        failure_persistence: None,
        max_shrink_iters: 2000,
        ..Config::default()
    };
    if std::env::var_os("PROPTEST_CASES").is_none() {
        config.cases = cases;
    }
    if std::env::var_os("PROPTEST_RNG_SEED").is_none() {
        config.rng_seed = RngSeed::Fixed(0x5eed_f00d);
    }
    let cases = config.cases;
    let mut runner = TestRunner::new(config);
    READ.with(|r| r.set(0));
    REFUSED.with(|r| r.set(0));
    if let Err(e) = runner.run(&strategy, test) {
        panic!("{name}: {e}");
    }
    println!(
        "{name}: {cases} cases, {} reads, {} typed refusals",
        READ.with(|r| r.get()),
        REFUSED.with(|r| r.get())
    );
}

thread_local! {
    /// Reads that returned `Ok` / a typed error in the current [`check`].
    static READ: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    static REFUSED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

fn bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(any::<u8>(), 0..max)
}

/// An edit of a byte string: cut, bit flip, byte set, insertion, removal.
#[derive(Clone, Debug)]
enum ByteEdit {
    Truncate(Index),
    Flip(Index, u8),
    Set(Index, u8),
    Insert(Index, Vec<u8>),
    Remove(Index, Index),
}

fn byte_edits() -> impl Strategy<Value = Vec<ByteEdit>> {
    let edit = prop_oneof![
        any::<Index>().prop_map(ByteEdit::Truncate),
        (any::<Index>(), 0u8..8).prop_map(|(i, b)| ByteEdit::Flip(i, b)),
        (any::<Index>(), any::<u8>()).prop_map(|(i, b)| ByteEdit::Set(i, b)),
        (any::<Index>(), bytes(16)).prop_map(|(i, b)| ByteEdit::Insert(i, b)),
        (any::<Index>(), any::<Index>()).prop_map(|(a, b)| ByteEdit::Remove(a, b)),
    ];
    prop::collection::vec(edit, 1..4)
}

fn apply(mut data: Vec<u8>, edits: &[ByteEdit]) -> Vec<u8> {
    for edit in edits {
        if data.is_empty() {
            break;
        }
        match edit {
            ByteEdit::Truncate(i) => data.truncate(i.index(data.len())),
            ByteEdit::Flip(i, bit) => {
                let i = i.index(data.len());
                data[i] ^= 1 << bit;
            }
            ByteEdit::Set(i, b) => {
                let i = i.index(data.len());
                data[i] = *b;
            }
            ByteEdit::Insert(i, b) => {
                let i = i.index(data.len() + 1);
                data.splice(i..i, b.iter().copied());
            }
            ByteEdit::Remove(a, b) => {
                let (a, b) = (a.index(data.len()), b.index(data.len()));
                data.drain(a.min(b)..a.max(b));
            }
        }
    }
    data
}

/// `Ok` or the typed error `E`, never a panic (which the runner reports).
fn typed<T, E: std::fmt::Display>(
    result: Result<T, E>,
    file: &str,
) -> Result<Option<T>, TestCaseError> {
    match result {
        Ok(v) => {
            READ.with(|r| r.set(r.get() + 1));
            Ok(Some(v))
        }
        Err(e) => {
            REFUSED.with(|r| r.set(r.get() + 1));
            let message = e.to_string();
            prop_assert!(
                message.contains(file),
                "the error does not name {file}: {message}"
            );
            Ok(None)
        }
    }
}

// ---------------------------------------------------------------- .ply

const PLY: &str = "splats.ply";

/// Parses `bytes` as a `.ply` and, when that works, reads splats from it
/// and writes it back: no panic, the data no larger than the file can back
/// (8 bytes per ASCII byte at most: a one-character `double`), and the
/// written file reads back to the same elements.
fn ply_property(bytes: &[u8]) -> Result<(), TestCaseError> {
    let path = Path::new(PLY);
    let Some(ply) = typed(PlyData::parse(bytes, path), PLY)? else {
        return Ok(());
    };
    let data: usize = ply.elements.iter().map(|e| e.data.len()).sum();
    prop_assert!(
        data <= 8 * bytes.len(),
        "{data} data bytes from a {}-byte file",
        bytes.len()
    );
    if let Some(splats) = typed(gaussians_from_ply(ply.clone()), PLY)? {
        let g = splats.gaussians;
        prop_assert!(g.means.iter().flatten().all(|v| v.is_finite()));
        prop_assert!(g.log_scales.iter().flatten().all(|v| !v.is_nan()));
        prop_assert!(g.opacity_logits.iter().all(|v| v.is_finite()));
    }
    let written = ply.to_bytes(&[], path).expect("a parsed file encodes");
    let back = PlyData::parse(&written, path).expect("a written file parses");
    prop_assert_eq!(&back.elements, &ply.elements);
    prop_assert_eq!(&back.header_lines, &ply.header_lines);
    Ok(())
}

const SCALARS: [&str; 16] = [
    "char", "uchar", "short", "ushort", "int", "uint", "float", "double", "int8", "uint8", "int16",
    "uint16", "int32", "uint32", "float32", "float64",
];

/// A count as a header writes it: small, huge (more rows than any file
/// holds, past `u32`, `usize::MAX`, past `u64`) or not a count.
fn count_token() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => (0u64..6).prop_map(|n| n.to_string()),
        2 => any::<u64>().prop_map(|n| n.to_string()),
        1 => (1u64 << 20..1u64 << 40).prop_map(|n| n.to_string()),
        1 => prop::sample::select(vec![
            "18446744073709551615", "18446744073709551616", "4294967296", "-1", "1e9", "", "0x10",
        ])
        .prop_map(String::from),
    ]
}

fn property_name() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "x", "y", "z", "nx", "opacity", "f_dc_0", "f_dc_1", "f_dc_2", "f_rest_0", "scale_0",
            "scale_1", "scale_2", "rot_0", "rot_1", "rot_2", "rot_3", "red", "green", "blue",
        ])
        .prop_map(String::from),
        "[a-z_0-9]{1,8}",
    ]
}

fn property_line() -> impl Strategy<Value = String> {
    let scalar = prop::sample::select(SCALARS.to_vec());
    prop_oneof![
        5 => (scalar.clone(), property_name()).prop_map(|(t, n)| format!("property {t} {n}")),
        1 => (scalar.clone(), scalar, property_name())
            .prop_map(|(c, t, n)| format!("property list {c} {t} {n}")),
        1 => ("[a-z0-9]{0,6}", property_name()).prop_map(|(t, n)| format!("property {t} {n}")),
    ]
}

/// Header lines: elements with their properties, now and then a comment,
/// a stray property or a line that is not PLY.
fn header_lines() -> impl Strategy<Value = Vec<String>> {
    let element = (
        prop::sample::select(vec!["vertex", "vertex", "face"]),
        count_token(),
        prop::collection::vec(property_line(), 0..8),
    )
        .prop_map(|(e, n, properties)| {
            let mut lines = vec![format!("element {e} {n}")];
            lines.extend(properties);
            lines
        });
    let other = prop_oneof![
        "[ -~]{0,20}".prop_map(|t| format!("comment {t}")),
        property_line(),
        "[ -~]{0,24}",
    ]
    .prop_map(|line| vec![line]);
    prop::collection::vec(prop_oneof![6 => element, 1 => other], 0..4)
        .prop_map(|blocks| blocks.concat())
}

/// A header of random elements and properties over a body of random bytes
/// or of ASCII numbers (some out of range, some not numbers).
fn ply_from_parts() -> impl Strategy<Value = Vec<u8>> {
    let format = prop_oneof![
        4 => Just("ascii"),
        4 => Just("binary_little_endian"),
        1 => Just("binary_big_endian"),
    ];
    let token = prop::sample::select(vec![
        "0",
        "1",
        "2",
        "3",
        "-1",
        "3.5",
        "nan",
        "inf",
        "-inf",
        "255",
        "256",
        "65536",
        "1e40",
        "1e400",
        "4294967296",
        "x",
        "\n",
    ]);
    let body = prop_oneof![
        bytes(256),
        prop::collection::vec(token, 0..64).prop_map(|t| t.join(" ").into_bytes()),
    ];
    (
        format,
        header_lines(),
        any::<bool>(),
        prop::bool::weighted(0.9),
        body,
    )
        .prop_map(|(format, lines, crlf, end, body)| {
            let nl = if crlf { "\r\n" } else { "\n" };
            let mut text = format!("ply{nl}format {format} 1.0{nl}");
            for line in lines {
                text.push_str(&line);
                text.push_str(nl);
            }
            if end {
                text.push_str("end_header");
                text.push_str(nl);
            }
            let mut out = text.into_bytes();
            out.extend(body);
            out
        })
}

/// A valid 3DGS file of a 2³ lattice (SH degree 1), binary.
fn valid_ply() -> Vec<u8> {
    let mut g = common::splat_lattice(2);
    g.sh_degree = 1;
    g.sh = (0..g.len() * 4)
        .map(|i| [i as f32 * 0.01, 0.2, -0.1])
        .collect();
    let path = Path::new(PLY);
    PlyData::from_gaussians(&g, path)
        .to_bytes(&[], path)
        .unwrap()
}

/// The same file in ASCII, with a `face` element of index lists after it.
fn valid_ascii_ply() -> Vec<u8> {
    let binary = valid_ply();
    let ply = PlyData::parse(&binary, Path::new(PLY)).unwrap();
    let vertex = ply.vertex().unwrap();
    let mut text = format!("ply\nformat ascii 1.0\nelement vertex {}\n", vertex.count);
    for p in &vertex.properties {
        text.push_str(&format!("property float {}\n", p.name));
    }
    text.push_str("element face 2\nproperty list uchar int vertex_indices\nend_header\n");
    let columns: Vec<Vec<f32>> = vertex
        .properties
        .iter()
        .map(|p| vertex.column_f32(&p.name).unwrap())
        .collect();
    for row in 0..vertex.count {
        let values: Vec<String> = columns.iter().map(|c| c[row].to_string()).collect();
        text.push_str(&values.join(" "));
        text.push('\n');
    }
    text.push_str("3 0 1 2\n4 4 5 6 7\n");
    text.into_bytes()
}

#[test]
fn ply_reader_never_panics_on_random_bytes() {
    check("random bytes", 256, bytes(512), |b| ply_property(&b));
    // The same after a valid magic line and format line.
    let prefixed = (
        prop::sample::select(vec!["ascii", "binary_little_endian"]),
        bytes(256),
    )
        .prop_map(|(format, body)| {
            let mut b = format!("ply\nformat {format} 1.0\n").into_bytes();
            b.extend(body);
            b
        });
    check("random bytes after a header start", 256, prefixed, |b| {
        ply_property(&b)
    });
}

#[test]
fn ply_reader_never_panics_on_random_headers() {
    check("random header and body", 768, ply_from_parts(), |b| {
        ply_property(&b)
    });
}

#[test]
fn ply_reader_never_panics_on_altered_valid_files() {
    let files = [valid_ply(), valid_ascii_ply()];
    for f in &files {
        ply_property(f).unwrap();
        let splats = gaussians_from_ply(PlyData::parse(f, Path::new(PLY)).unwrap()).unwrap();
        assert_eq!(splats.gaussians.len(), 8);
    }
    let strategy = (any::<bool>(), byte_edits());
    check("altered valid files", 384, strategy, |(ascii, edits)| {
        ply_property(&apply(files[ascii as usize].clone(), &edits))
    });
    // Cut anywhere: always an error (every row is needed).
    check(
        "cut valid files",
        128,
        (any::<bool>(), any::<Index>()),
        |(ascii, at)| {
            let f = &files[ascii as usize];
            let cut = &f[..at.index(f.len() - 1)];
            let result = PlyData::parse(cut, Path::new(PLY)).and_then(gaussians_from_ply);
            prop_assert!(
                result.is_err(),
                "a file cut at {} of {} bytes read",
                cut.len(),
                f.len()
            );
            Ok(())
        },
    );
}

/// A valid header whose `vertex` count claims more rows than the file
/// holds (up to `usize::MAX`): a truncation error at once, without
/// allocating for the claimed rows.
#[test]
fn ply_counts_beyond_the_file_are_refused_without_allocating() {
    let files = [valid_ply(), valid_ascii_ply()];
    let strategy = (
        any::<bool>(),
        prop_oneof![9usize..100, any::<usize>(), Just(usize::MAX)],
    );
    check("huge vertex counts", 128, strategy, |(ascii, count)| {
        let text = String::from_utf8_lossy(&files[ascii as usize]).into_owned();
        let f = &files[ascii as usize];
        let header_end = text.find("end_header").unwrap();
        let header =
            text[..header_end].replace("element vertex 8", &format!("element vertex {count}"));
        let mut bytes = header.into_bytes();
        bytes.extend_from_slice(&f[header_end..]);
        let e = PlyData::parse(&bytes, Path::new(PLY)).unwrap_err();
        prop_assert!(
            matches!(
                e,
                PlyError::Truncated { .. } | PlyError::BadAsciiValue { .. }
            ),
            "{e}"
        );
        prop_assert!(e.to_string().contains(PLY));
        Ok(())
    });
}

/// Elements without properties claim rows that take no bytes: a huge
/// count of them reads (as nothing) at once, in either format.
#[test]
fn ply_elements_without_properties_read_at_once_whatever_their_count() {
    for format in ["ascii", "binary_little_endian"] {
        let bytes =
            format!("ply\nformat {format} 1.0\nelement vertex 18446744073709551615\nend_header\n");
        let start = std::time::Instant::now();
        let result = PlyData::parse(bytes.as_bytes(), Path::new(PLY));
        assert!(start.elapsed().as_secs_f64() < 1.0, "{format}: {result:?}");
        let e = result.and_then(gaussians_from_ply).unwrap_err();
        assert!(
            matches!(e, PlyError::MissingProperty { .. }),
            "{format}: {e}"
        );
    }
}

// ------------------------------------------------------------ PNG frames

/// A PNG of `width × height` in the given colour type and bit depth, its
/// samples (and palette indices) from `seed`.
#[derive(Clone, Debug)]
struct PngCase {
    color: png::ColorType,
    depth: png::BitDepth,
    width: u32,
    height: u32,
    palette: usize,
    trns: bool,
    seed: Vec<u8>,
}

fn png_case() -> impl Strategy<Value = PngCase> {
    use png::{BitDepth as D, ColorType as C};
    let kind = prop::sample::select(vec![
        (C::Grayscale, D::One),
        (C::Grayscale, D::Two),
        (C::Grayscale, D::Four),
        (C::Grayscale, D::Eight),
        (C::Grayscale, D::Sixteen),
        (C::GrayscaleAlpha, D::Eight),
        (C::GrayscaleAlpha, D::Sixteen),
        (C::Rgb, D::Eight),
        (C::Rgb, D::Sixteen),
        (C::Rgba, D::Eight),
        (C::Rgba, D::Sixteen),
        (C::Indexed, D::One),
        (C::Indexed, D::Two),
        (C::Indexed, D::Four),
        (C::Indexed, D::Eight),
    ]);
    (
        kind,
        1u32..7,
        1u32..7,
        1usize..=256,
        any::<bool>(),
        bytes(64),
    )
        .prop_map(
            |((color, depth), width, height, palette, trns, seed)| PngCase {
                color,
                depth,
                width,
                height,
                palette,
                trns,
                seed,
            },
        )
}

fn encode_png(c: &PngCase) -> Vec<u8> {
    let channels = match c.color {
        png::ColorType::Grayscale | png::ColorType::Indexed => 1,
        png::ColorType::GrayscaleAlpha => 2,
        png::ColorType::Rgb => 3,
        png::ColorType::Rgba => 4,
    };
    let bits = c.depth as usize;
    let row = (c.width as usize * channels * bits).div_ceil(8);
    let mut data: Vec<u8> = (0..row * c.height as usize)
        .map(|i| c.seed.get(i % c.seed.len().max(1)).copied().unwrap_or(0xff) ^ (i as u8))
        .collect();
    if c.color == png::ColorType::Indexed {
        // Indices within the palette (an index past it is another test).
        let entries = c.palette.min(1 << bits);
        for byte in &mut data {
            let mut out = 0u8;
            for k in (0..8 / bits).rev() {
                let index = ((*byte >> (k * bits)) & ((1 << bits) - 1) as u8) as usize % entries;
                out |= (index as u8) << (k * bits);
            }
            *byte = out;
        }
    }
    let mut out = Vec::new();
    {
        let mut encoder = png::Encoder::new(&mut out, c.width, c.height);
        encoder.set_color(c.color);
        encoder.set_depth(c.depth);
        if c.color == png::ColorType::Indexed {
            let entries = c.palette.min(1 << bits);
            encoder.set_palette(
                (0..entries * 3)
                    .map(|i| (i * 37) as u8)
                    .collect::<Vec<u8>>(),
            );
            if c.trns {
                encoder.set_trns((0..entries).map(|i| (i * 91) as u8).collect::<Vec<u8>>());
            }
        }
        let mut writer = encoder.write_header().unwrap();
        writer.write_image_data(&data).unwrap();
    }
    out
}

const FRAME: &str = "f0007.png";

/// Every frame reader on `bytes` (as `FRAME` in `dir`): `Ok` or the typed
/// error naming the file; a decoded frame has `width × height` pixels in
/// [0, 1].
fn frame_property(dir: &Path, bytes: &[u8]) -> Result<Option<(u32, u32)>, TestCaseError> {
    let path = dir.join(FRAME);
    std::fs::write(&path, bytes).unwrap();
    let size = typed(frame_size(&path), FRAME)?;
    let frame = typed(load_frame(&path, None), FRAME)?;
    if let Some(f) = &frame {
        prop_assert_eq!(f.pixels.len(), f.width as usize * f.height as usize);
        prop_assert!(f.pixels.iter().flatten().all(|v| (0.0..=1.0).contains(v)));
        prop_assert_eq!(size, Some((f.width, f.height)));
    }
    if let Some((w, h)) = size {
        typed(load_frame(&path, Some((w, h))), FRAME)?;
        typed(load_mask(&path, Some((w, h))), FRAME)?;
        // Another size is refused, whatever the content.
        prop_assert!(load_frame(&path, Some((w + 1, h))).is_err());
    }
    typed(load_mask(&path, None), FRAME)?;
    Ok(frame.map(|f| (f.width, f.height)))
}

#[test]
fn frame_readers_decode_every_png_kind() {
    let dir = tempfile::tempdir().unwrap();
    check("valid PNGs", 192, png_case(), |c| {
        let decoded = frame_property(dir.path(), &encode_png(&c))?;
        prop_assert_eq!(decoded, Some((c.width, c.height)), "{:?}", c);
        Ok(())
    });
}

#[test]
fn frame_readers_never_panic_on_random_or_altered_bytes() {
    let dir = tempfile::tempdir().unwrap();
    check("random bytes", 128, bytes(256), |b| {
        frame_property(dir.path(), &b).map(drop)
    });
    let signed = bytes(256).prop_map(|b| [b"\x89PNG\r\n\x1a\n".as_slice(), &b].concat());
    check("random bytes after the PNG signature", 128, signed, |b| {
        frame_property(dir.path(), &b).map(drop)
    });
    check(
        "altered valid PNGs",
        256,
        (png_case(), byte_edits()),
        |(c, edits)| frame_property(dir.path(), &apply(encode_png(&c), &edits)).map(drop),
    );
    check(
        "cut valid PNGs",
        128,
        (png_case(), any::<Index>()),
        |(c, at)| {
            let b = encode_png(&c);
            frame_property(dir.path(), &b[..at.index(b.len())]).map(drop)
        },
    );
}

/// CRC-32 of PNG chunks (ISO 3309).
fn crc32(data: &[u8]) -> u32 {
    let mut crc = 0xffff_ffffu32;
    for &b in data {
        crc ^= b as u32;
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xedb8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

fn chunk(kind: &[u8; 4], data: &[u8]) -> Vec<u8> {
    let mut out = (data.len() as u32).to_be_bytes().to_vec();
    let body = [kind.as_slice(), data].concat();
    out.extend_from_slice(&body);
    out.extend_from_slice(&crc32(&body).to_be_bytes());
    out
}

/// A well-formed PNG header claiming up to 2³¹ − 1 pixels a side over a
/// few bytes of image data: refused when its size is not the expected
/// one before anything is decoded, and never a panic.
#[test]
fn frame_sizes_beyond_the_file_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let side = prop_oneof![1u32..64, 1u32..0x7fff_ffff, Just(0x7fff_ffff), Just(0)];
    let kind = prop::sample::select(vec![
        (0u8, 8u8),
        (0, 16),
        (2, 8),
        (2, 16),
        (6, 8),
        (6, 16),
        (3, 8),
    ]);
    let strategy = (side.clone(), side, kind, bytes(64));
    check(
        "huge PNG headers",
        96,
        strategy,
        |(w, h, (color, depth), data)| {
            let mut ihdr = w.to_be_bytes().to_vec();
            ihdr.extend_from_slice(&h.to_be_bytes());
            ihdr.extend_from_slice(&[depth, color, 0, 0, 0]);
            let mut b = b"\x89PNG\r\n\x1a\n".to_vec();
            b.extend(chunk(b"IHDR", &ihdr));
            if color == 3 {
                b.extend(chunk(b"PLTE", &[0, 0, 0, 255, 255, 255]));
            }
            b.extend(chunk(b"IDAT", &data));
            b.extend(chunk(b"IEND", &[]));
            let path = dir.path().join(FRAME);
            std::fs::write(&path, &b).unwrap();
            let size = typed(frame_size(&path), FRAME)?;
            let frame = typed(load_frame(&path, Some((16, 12))), FRAME)?;
            let mask = typed(load_mask(&path, Some((16, 12))), FRAME)?;
            prop_assert!(
                frame.is_none() && mask.is_none(),
                "{w}×{h} over {} bytes decoded",
                data.len()
            );
            if let Some(size) = size {
                prop_assert_eq!(size, (w, h));
                if size != (16, 12) {
                    let e = load_frame(&path, Some((16, 12))).unwrap_err();
                    prop_assert!(matches!(e, FrameError::WrongSize { .. }), "{w}×{h}: {}", e);
                }
            }
            Ok(())
        },
    );
}

/// A header claiming 10000 × 10000 RGBA pixels over 8 bytes of data, as a
/// frame of a 16 × 12 camera: refused by its size from the header alone
/// (decoding first allocated the 400 MB the header claims, within the
/// image crate's default limit, before finding the data missing).
#[test]
fn a_frame_claiming_a_huge_size_is_refused_from_its_header() {
    let dir = tempfile::tempdir().unwrap();
    let mut ihdr = 10_000u32.to_be_bytes().to_vec();
    ihdr.extend_from_slice(&10_000u32.to_be_bytes());
    ihdr.extend_from_slice(&[8, 6, 0, 0, 0]);
    let mut b = b"\x89PNG\r\n\x1a\n".to_vec();
    b.extend(chunk(b"IHDR", &ihdr));
    b.extend(chunk(b"IDAT", &[0x78, 0x9c, 0, 0, 0, 0, 0, 0]));
    b.extend(chunk(b"IEND", &[]));
    let path = dir.path().join(FRAME);
    std::fs::write(&path, &b).unwrap();
    assert_eq!(frame_size(&path).unwrap(), (10_000, 10_000));
    for e in [
        load_frame(&path, Some((16, 12))).unwrap_err(),
        load_mask(&path, Some((16, 12))).unwrap_err(),
    ] {
        assert!(matches!(e, FrameError::WrongSize { .. }), "{e}");
        let m = e.to_string();
        assert!(
            m.contains(FRAME) && m.contains("10000×10000") && m.contains("16×12"),
            "{m}"
        );
    }
}

// ------------------------------------------------------ drivers.safetensors

const DRIVERS: &str = "drivers.safetensors";

/// A valid `drivers.safetensors` of a 3³ lattice with 8 drivers.
fn valid_drivers() -> Vec<u8> {
    let means: Vec<[f32; 3]> = (0..27)
        .map(|i| {
            [
                (i % 3) as f32 * 0.4,
                ((i / 3) % 3) as f32 * 0.4,
                (i / 9) as f32 * 0.4,
            ]
        })
        .collect();
    let (dir, scene) = common::scene_with(&means, "[drivers]\ncount = 8\nk = 8\n");
    let scene = scene.unwrap();
    let drivers = physfit::drive::DriverSet::from_scene(&scene).unwrap();
    let n = drivers.len();
    let log10: Vec<f64> = (0..n).map(|d| 3.5 + d as f64 / 9.0).collect();
    let velocity: Vec<f64> = (0..3 * n).map(|i| (i as f64 * 0.3).sin()).collect();
    let file = FittedDrivers::new(&scene, &drivers, &log10, &velocity, Some(&log10)).unwrap();
    let path = dir.path().join(DRIVERS);
    file.save(&path).unwrap();
    std::fs::read(path).unwrap()
}

/// The archive parser on `bytes` in memory, then the drivers reader on the
/// file: `Ok` or the typed error naming the file.
fn drivers_property(dir: &Path, bytes: &[u8]) -> Result<bool, TestCaseError> {
    let path = dir.join(DRIVERS);
    if let Some(archive) = typed(TensorArchive::parse(bytes, &path), DRIVERS)? {
        for name in archive.names() {
            let _ = archive.tensor::<f32>(name);
            let _ = archive.tensor::<u8>(name);
        }
    }
    std::fs::write(&path, bytes).unwrap();
    Ok(typed(FittedDrivers::load(&path), DRIVERS)?.is_some())
}

/// A safetensors header of random tensors (any dtype, shapes and offsets
/// up to `u64::MAX`) and metadata, its length field right or random.
fn safetensors_from_parts() -> impl Strategy<Value = Vec<u8>> {
    let big = prop_oneof![
        4 => 0u64..16,
        1 => any::<u64>(),
        1 => prop::sample::select(vec![u32::MAX as u64, u64::MAX, 1 << 40, (1 << 62) + 1]),
    ];
    let tensor = (
        prop::sample::select(vec![
            "rest",
            "log10_youngs",
            "velocity",
            "anchored",
            "fill_only",
            "followers",
            "neighbours",
            "graph",
            "anchored_splats",
            "youngs_log10_std",
            "x",
        ]),
        prop::sample::select(vec![
            "F32", "F64", "U8", "U32", "BOOL", "I64", "F8_E4M3", "XX",
        ]),
        prop::collection::vec(big.clone(), 0..3),
        (big.clone(), big),
    );
    let meta = prop::collection::vec(
        (
            prop::sample::select(vec![
                "format",
                "format_version",
                "drivers.count",
                "drivers.k",
                "drivers.volume",
                "simulation.grid_res",
                "gaussians.sha256",
                "x",
            ]),
            prop::sample::select(vec![
                "physfit.drivers",
                "1",
                "2",
                "8",
                "nan",
                "-1",
                "1e400",
                "",
            ]),
        ),
        0..4,
    )
    .prop_map(|m| {
        let fields: Vec<String> = m.iter().map(|(k, v)| format!("\"{k}\":\"{v}\"")).collect();
        format!("\"__metadata__\":{{{}}}", fields.join(","))
    });
    (
        prop::collection::vec(tensor, 0..4),
        any::<bool>(),
        prop::option::of(meta),
        prop::option::of(any::<u64>()),
        bytes(96),
    )
        .prop_map(|(tensors, consistent, meta, length, mut data)| {
            // Consistent: offsets back to back from the shapes, and as many
            // data bytes as they cover (when that is small).
            let mut at = 0u64;
            let mut entries: Vec<String> = tensors
                .into_iter()
                .map(|(name, dtype, shape, (mut a, mut b))| {
                    let size = match dtype {
                        "F64" | "I64" => 8,
                        "F32" | "U32" => 4,
                        _ => 1,
                    };
                    let bytes = shape.iter().try_fold(size, |n: u64, d| n.checked_mul(*d));
                    if let Some(n) = bytes.filter(|n| consistent && *n <= 256) {
                        (a, b) = (at, at + n);
                        at += n;
                    }
                    format!(
                        "\"{name}\":{{\"dtype\":\"{dtype}\",\"shape\":{shape:?},\"data_offsets\":[{a},{b}]}}"
                    )
                })
                .collect();
            if consistent {
                data.resize(at as usize, 0x3f);
            }
            entries.extend(meta);
            let header = format!("{{{}}}", entries.join(","));
            let length = length.unwrap_or(header.len() as u64);
            let mut out = length.to_le_bytes().to_vec();
            out.extend_from_slice(header.as_bytes());
            out.extend(data);
            out
        })
}

#[test]
fn drivers_reader_never_panics_on_random_or_altered_files() {
    let dir = tempfile::tempdir().unwrap();
    let valid = valid_drivers();
    assert!(drivers_property(dir.path(), &valid).unwrap());
    check("random bytes", 128, bytes(256), |b| {
        drivers_property(dir.path(), &b).map(drop)
    });
    check("random headers", 384, safetensors_from_parts(), |b| {
        drivers_property(dir.path(), &b).map(drop)
    });
    check("altered valid files", 192, byte_edits(), |edits| {
        drivers_property(dir.path(), &apply(valid.clone(), &edits)).map(drop)
    });
    check("cut valid files", 96, any::<Index>(), |at| {
        let cut = &valid[..at.index(valid.len())];
        prop_assert!(
            !drivers_property(dir.path(), cut)?,
            "{} bytes read",
            cut.len()
        );
        Ok(())
    });
}

/// A valid file with one metadata value replaced by an odd token: read or
/// refused naming the file, never a panic.
#[test]
fn drivers_reader_never_panics_on_odd_metadata() {
    let dir = tempfile::tempdir().unwrap();
    let valid = valid_drivers();
    let archive = safetensors::SafeTensors::deserialize(&valid).unwrap();
    let (_, meta) = safetensors::SafeTensors::read_metadata(&valid).unwrap();
    let meta = meta.metadata().clone().unwrap();
    let mut keys: Vec<String> = meta.keys().cloned().collect();
    keys.sort();
    let tensors: Vec<_> = archive
        .tensors()
        .into_iter()
        .map(|(n, v)| (n, v.dtype(), v.shape().to_vec(), v.data().to_vec()))
        .collect();
    check(
        "odd metadata",
        192,
        (any::<Index>(), odd_token()),
        |(key, token)| {
            let mut meta = meta.clone();
            meta.insert(keys[key.index(keys.len())].clone(), token);
            let views: Vec<_> = tensors
                .iter()
                .map(|(n, d, s, b)| {
                    (
                        n.clone(),
                        safetensors::tensor::TensorView::new(*d, s.clone(), b).unwrap(),
                    )
                })
                .collect();
            let bytes = safetensors::serialize(views, Some(meta)).unwrap();
            drivers_property(dir.path(), &bytes).map(drop)
        },
    );
}

// ---------------------------------------------------------- checkpoint.json

const CHECKPOINT: &str = "checkpoint.json";

fn fingerprint() -> FitFingerprint {
    FitFingerprint(BTreeMap::from([
        ("gaussians.path (SHA-256)".to_string(), "ab".repeat(32)),
        ("fit.rounds".to_string(), "2".to_string()),
    ]))
}

fn valid_checkpoint(dir: &Path) -> Vec<u8> {
    let path = dir.join(CHECKPOINT);
    Checkpoint::new(
        fingerprint(),
        crate::fit_checkpoint::state(),
        vec![1.5, 2.25],
    )
    .save(&path)
    .unwrap();
    std::fs::read(path).unwrap()
}

fn checkpoint_property(dir: &Path, bytes: &[u8]) -> Result<bool, TestCaseError> {
    let path = dir.join(CHECKPOINT);
    std::fs::write(&path, bytes).unwrap();
    Ok(typed(Checkpoint::load(&path, &fingerprint()), CHECKPOINT)?.is_some())
}

/// Spans of the numbers in `text` (a digit run, with its sign, not part
/// of a name such as `f_dc_0`).
fn number_spans(text: &str) -> Vec<(usize, usize)> {
    let b = text.as_bytes();
    let mut spans = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let starts = (b[i].is_ascii_digit()
            || (b[i] == b'-' && b.get(i + 1).is_some_and(u8::is_ascii_digit)))
            && (i == 0 || b" [=,(:{\n\t".contains(&b[i - 1]));
        if starts {
            let end = (i + 1..b.len())
                .find(|&j| !(b[j].is_ascii_digit() || b".eE+-_".contains(&b[j])))
                .unwrap_or(b.len());
            spans.push((i, end));
            i = end;
        } else {
            i += 1;
        }
    }
    spans
}

/// What a typo or a broken script puts where a number goes.
fn odd_token() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::sample::select(vec![
            "nan", "NaN", "inf", "-inf", "+inf", "Infinity", "1e400", "-1e400", "1e-400", "-0",
            "-0.0", "0", "0.0", "-1", "1", "2", "4294967296", "18446744073709551616",
            "-9223372036854775809", "9223372036854775807", "1.7976931348623157e308", "\"x\"", "\"\"",
            "true", "null", "[]", "{}", "[1, 2]", "1_000", "0x10", "1e", ".", "", " ", "\"1\"",
        ])
        .prop_map(String::from),
        1 => any::<f64>().prop_map(|v| v.to_string()),
        1 => any::<i64>().prop_map(|v| v.to_string()),
        1 => "[ -~]{0,6}",
    ]
}

/// Numbers of `text` replaced by odd tokens.
fn with_numbers_replaced(text: &str, edits: &[(Index, String)]) -> String {
    let mut text = text.to_string();
    for (at, token) in edits {
        let spans = number_spans(&text);
        if spans.is_empty() {
            break;
        }
        let (a, b) = spans[at.index(spans.len())];
        text.replace_range(a..b, token);
    }
    text
}

#[test]
fn checkpoint_reader_never_panics_on_random_or_altered_files() {
    let dir = tempfile::tempdir().unwrap();
    let valid = valid_checkpoint(dir.path());
    assert!(checkpoint_property(dir.path(), &valid).unwrap());
    check("random bytes", 128, bytes(256), |b| {
        checkpoint_property(dir.path(), &b).map(drop)
    });
    let json_ish = prop::collection::vec(
        prop::sample::select(vec![
            "{",
            "}",
            "[",
            "]",
            ":",
            ",",
            "\"format\"",
            "\"version\"",
            "2",
            "\"physfit.checkpoint\"",
            "null",
            "1e400",
            "\"state\"",
        ]),
        0..40,
    )
    .prop_map(|t| t.concat().into_bytes());
    check("random JSON", 192, json_ish, |b| {
        checkpoint_property(dir.path(), &b).map(drop)
    });
    check("altered valid files", 192, byte_edits(), |edits| {
        checkpoint_property(dir.path(), &apply(valid.clone(), &edits)).map(drop)
    });
    check("cut valid files", 96, any::<Index>(), |at| {
        let cut = &valid[..at.index(valid.len())];
        prop_assert!(
            !checkpoint_property(dir.path(), cut)?,
            "{} bytes read",
            cut.len()
        );
        Ok(())
    });
    let text = String::from_utf8(valid.clone()).unwrap();
    let edits = prop::collection::vec((any::<Index>(), odd_token()), 1..3);
    check("odd numbers", 192, edits, |edits| {
        checkpoint_property(dir.path(), with_numbers_replaced(&text, &edits).as_bytes()).map(drop)
    });
    // Any other version: refused as such.
    check("other versions", 64, any::<i64>(), |version| {
        let current = format!("\"version\":{CHECKPOINT_VERSION}");
        assert!(text.contains(&current), "the checkpoint holds its version");
        let other = text.replacen(&current, &format!("\"version\":{version}"), 1);
        let path = dir.path().join(CHECKPOINT);
        std::fs::write(&path, other).unwrap();
        match Checkpoint::load(&path, &fingerprint()) {
            Ok(_) => prop_assert_eq!(version, i64::from(CHECKPOINT_VERSION)),
            Err(e) => prop_assert!(matches!(e, CheckpointError::Format { .. }), "{}", e),
        }
        Ok(())
    });
}

// ------------------------------------------------------------------- TOML

/// An edit of a TOML text: a line dropped, doubled or swapped, a number
/// replaced by an odd token, the text cut.
#[derive(Clone, Debug)]
enum TextEdit {
    DropLine(Index),
    DoubleLine(Index),
    SwapLines(Index, Index),
    Number(Index, String),
    Cut(Index),
    Insert(Index, String),
}

fn text_edits() -> impl Strategy<Value = Vec<TextEdit>> {
    let edit = prop_oneof![
        2 => any::<Index>().prop_map(TextEdit::DropLine),
        1 => any::<Index>().prop_map(TextEdit::DoubleLine),
        1 => (any::<Index>(), any::<Index>()).prop_map(|(a, b)| TextEdit::SwapLines(a, b)),
        4 => (any::<Index>(), odd_token()).prop_map(|(i, t)| TextEdit::Number(i, t)),
        1 => any::<Index>().prop_map(TextEdit::Cut),
        1 => (any::<Index>(), toml_ish()).prop_map(|(i, t)| TextEdit::Insert(i, t)),
    ];
    prop::collection::vec(edit, 1..4)
}

fn edit_text(text: &str, edits: &[TextEdit]) -> String {
    let mut text = text.to_string();
    for edit in edits {
        let mut lines: Vec<String> = text.lines().map(String::from).collect();
        match edit {
            TextEdit::DropLine(i) if !lines.is_empty() => {
                lines.remove(i.index(lines.len()));
            }
            TextEdit::DoubleLine(i) if !lines.is_empty() => {
                let i = i.index(lines.len());
                lines.insert(i, lines[i].clone());
            }
            TextEdit::SwapLines(a, b) if !lines.is_empty() => {
                let n = lines.len();
                lines.swap(a.index(n), b.index(n));
            }
            TextEdit::Insert(i, t) => {
                let i = i.index(lines.len() + 1);
                lines.insert(i, t.clone());
            }
            TextEdit::Number(i, token) => {
                text = with_numbers_replaced(&text, &[(*i, token.clone())]);
                continue;
            }
            TextEdit::Cut(i) => {
                let at = i.index(text.len() + 1);
                let at = (0..=at)
                    .rev()
                    .find(|&a| text.is_char_boundary(a))
                    .unwrap_or(0);
                text.truncate(at);
                continue;
            }
            _ => {}
        }
        text = lines.join("\n");
    }
    text
}

/// Text made of TOML's punctuation, this project's table and key names,
/// and odd values.
fn toml_ish() -> impl Strategy<Value = String> {
    let token = prop_oneof![
        prop::sample::select(vec![
            "[",
            "]",
            "[[",
            "]]",
            "=",
            " = ",
            "\n",
            "\"",
            "'",
            ",",
            "{",
            "}",
            ".",
            "#",
            " ",
            "\"\"\"",
            "views",
            "camera",
            "gaussians",
            "path",
            "fit",
            "velocity",
            "stiffness",
            "youngs",
            "kind",
            "interactions",
            "frames",
            "width",
            "height",
            "min",
            "max",
            "box",
            "regions",
            "drivers",
            "count",
            "simulation",
            "material",
            "\"splats.ply\"",
            "\"uniform\"",
            "\"impulse\"",
            "\"boxes\"",
            "\"random\"",
            "value",
            "[0, 0, 0]",
            "1",
            "-1",
            "0",
            "nan",
            "inf",
            "1e400",
            "true",
            "9223372036854775807",
        ])
        .prop_map(String::from),
        "\\PC{0,3}",
    ];
    prop::collection::vec(token, 0..24).prop_map(|t| t.concat())
}

fn toml_text() -> impl Strategy<Value = String> {
    prop_oneof![
        toml_ish(),
        "\\PC{0,120}",
        bytes(120).prop_map(|b| String::from_utf8_lossy(&b).into_owned())
    ]
}

fn scene_property(dir: &Path, text: &str) -> Result<(), TestCaseError> {
    let path = dir.join("scene.toml");
    std::fs::write(&path, text).unwrap();
    typed(Scene::load(&path), "scene.toml").map(drop)
}

#[test]
fn scene_reader_never_panics_on_random_or_edited_scenes() {
    let dir = crate::bad_inputs::full_scene_dir();
    let full = crate::bad_inputs::FULL;
    scene_property(dir.path(), full).unwrap();
    check("random text", 192, toml_text(), |t| {
        scene_property(dir.path(), &t)
    });
    check("edited scene", 320, text_edits(), |edits| {
        scene_property(dir.path(), &edit_text(full, &edits))
    });
}

const TRUTH: &str = r#"
frames = 5
[youngs]
kind = "random"
seed = 3
mean = 4.5
amplitude = 0.3
length_scale = 0.2
modes = 8
[velocity]
kind = "boxes"
default = [0.0, 0.0, 0.0]
boxes = [{ min = [0, 0, 0], max = [1, 1, 1], value = [1, 2, 3] }]
"#;

fn truth_property(text: &str) -> Result<(), TestCaseError> {
    typed(
        Truth::parse(text, Path::new("truth.toml"), [3.0, 6.0]),
        "truth.toml",
    )
    .map(drop)
}

fn interactions_property(text: &str) -> Result<(), TestCaseError> {
    typed(Interactions::parse(text, "poke.toml"), "poke.toml").map(drop)
}

#[test]
fn truth_and_interactions_readers_never_panic_on_random_or_edited_files() {
    truth_property(TRUTH).unwrap();
    Truth::parse(TRUTH, Path::new("truth.toml"), [3.0, 6.0]).unwrap();
    check("random truth", 192, toml_text(), |t| truth_property(&t));
    check("edited truth", 256, text_edits(), |edits| {
        truth_property(&edit_text(TRUTH, &edits))
    });
    let file = crate::interactions::FILE;
    Interactions::parse(file, "poke.toml").unwrap();
    check("random interactions", 192, toml_text(), |t| {
        interactions_property(&t)
    });
    check("edited interactions", 256, text_edits(), |edits| {
        interactions_property(&edit_text(file, &edits))
    });
}
