exports.broken = function ( {
