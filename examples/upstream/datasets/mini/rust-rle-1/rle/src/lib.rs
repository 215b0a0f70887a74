//! Run-length decoding: a stream of runs, each a control byte `c` then, for `c < 128`, `c + 1`
//! literal bytes, or for `c >= 128`, one byte repeated `c - 126` times.

/// Why a stream cannot be decoded.
#[derive(Debug, PartialEq, Eq)]
pub enum Error {
    /// The stream ends inside a run.
    Truncated,
}

/// The bytes `input` stands for.
pub fn expand(input: &[u8]) -> Result<Vec<u8>, Error> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < input.len() {
        let control = input[at] as usize;
        if control < 128 {
            let count = control + 1;
            out.extend_from_slice(&input[at + 1..at + 1 + count]);
            at += 1 + count;
        } else {
            let byte = *input.get(at + 1).ok_or(Error::Truncated)?;
            out.extend(std::iter::repeat(byte).take(control - 126));
            at += 2;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_and_repeat_runs() {
        assert_eq!(expand(&[1, b'h', b'i', 129, b'!']), Ok(b"hi!!!".to_vec()));
    }

    #[test]
    fn empty() {
        assert_eq!(expand(&[]), Ok(vec![]));
    }

    #[test]
    fn a_repeat_run_without_its_byte_is_truncated() {
        assert_eq!(expand(&[130]), Err(Error::Truncated));
    }
}
