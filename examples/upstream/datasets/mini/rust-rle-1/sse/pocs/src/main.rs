// A literal run that announces six bytes where two follow: expand slices past its input.
fn main() {
    println!("{:?}", rle::expand(&[5, b'a', b'b']));
}
