//! Turns fuzzer bytes into numbers that hit the interesting cases often: small integer
//! grids (coplanar, touching, collinear, duplicate), special values (NaN, infinities,
//! zeros, huge and tiny magnitudes) and arbitrary bit patterns.

pub struct Bytes<'a>(pub &'a [u8]);

impl Bytes<'_> {
    pub fn byte(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&b, rest)) => {
                self.0 = rest;
                b
            }
            None => 0,
        }
    }

    pub fn f64(&mut self) -> f64 {
        const SPECIAL: [f64; 12] = [
            0.0,
            -0.0,
            1.0,
            -1.0,
            0.5,
            1e-300,
            1e300,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            1099511627776.0,
            5e-324,
        ];
        let tag = self.byte();
        match tag % 8 {
            0..=4 => f64::from(self.byte() % 5) - 2.0,
            5 => SPECIAL[(self.byte() % 12) as usize],
            6 => f64::from(self.byte() as i8) / 16.0,
            _ => {
                let mut b = [0u8; 8];
                for x in b.iter_mut() {
                    *x = self.byte();
                }
                f64::from_le_bytes(b)
            }
        }
    }

    #[allow(dead_code)] // Not every target that decodes bytes makes points.
    pub fn point(&mut self) -> glam::DVec3 {
        glam::DVec3::new(self.f64(), self.f64(), self.f64())
    }

    /// Twelve numbers as a row-major 3x4 pose; invalid ones are typed errors.
    #[allow(dead_code)] // Not every target that decodes bytes poses objects.
    pub fn pose(&mut self) -> kdop::Result<kdop::Pose> {
        let mut m = [0.0; 12];
        for x in m.iter_mut() {
            *x = self.f64();
        }
        kdop::Pose::from_rows(m)
    }
}
