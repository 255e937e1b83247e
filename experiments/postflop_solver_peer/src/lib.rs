//! What the peer's binaries share.

use postflop_solver::*;

/// Each player's expected share of the pot at the root, weighted by its normalized range (as
/// desktop-postflop shows it), after `finalize`.
pub fn root_evs(game: &mut PostFlopGame) -> [f64; 2] {
    game.back_to_root();
    game.cache_normalized_weights();
    let mut ev = [0.0f64; 2];
    for player in 0..2 {
        let weights = game.normalized_weights(player);
        let values = game.expected_values(player);
        let total: f64 = weights.iter().map(|&w| w as f64).sum();
        let sum: f64 = weights.iter().zip(&values).map(|(&w, &v)| w as f64 * v as f64).sum();
        ev[player] = sum / total;
    }
    ev
}
