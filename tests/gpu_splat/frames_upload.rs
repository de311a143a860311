//! Reference frames uploaded to one GPU storage buffer, back to back.

use std::path::Path;

use crate::common;
use physfit::loss::frames_upload::upload_frames;
use physfit::scene::frames::{load_frame, write_png16};

#[test]
fn frames_upload_to_a_storage_buffer() {
    let ctx = common::gpu();
    let dir = tempfile::tempdir().unwrap();
    let mut frames = Vec::new();
    for k in 0..2 {
        let p = dir.path().join(format!("f{k}.png"));
        let px: Vec<[f32; 4]> = common::gradient_image(5, 3)
            .iter()
            .map(|c| [c[0], c[1], k as f32, 1.0])
            .collect();
        write_png16(&p, 5, 3, &px).unwrap();
        frames.push(load_frame(&p, Some((5, 3))).unwrap());
    }
    let buf = upload_frames(&ctx, "test reference frames", &frames).unwrap();
    let back: Vec<[f32; 4]> = ctx.read_buffer(&buf).unwrap();
    let expected: Vec<[f32; 4]> = frames.iter().flat_map(|f| f.pixels.clone()).collect();
    assert_eq!(back, expected);
    assert!(Path::new(&dir.path().join("f1.png")).exists());
}
