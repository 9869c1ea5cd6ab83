"""What kind of axis a dimension is, from its coordinate variable (CF conventions 1.11,
section 4 "Coordinate Types"), else from its name as xarray users give it.

The one table of this knowledge: the viewer orients maps north up and keeps their aspect by
it, and labels latitudes and longitudes in degrees with a hemisphere.

Kinds: :data:`LATITUDE` and :data:`LONGITUDE` (geographic, in degrees: CF 4.1 and 4.2 units, or
the ``latitude``/``longitude`` standard names), :data:`GRID_Y` and :data:`GRID_X` (the axes of a
rotated or projected grid, which point the same ways but are not geographic degrees),
:data:`TIME` (CF 4.4: units "<unit> since <date>", or the ``time`` standard name),
:data:`VERTICAL` (CF 4.3: pressure units or a vertical standard name), :data:`OTHER` (a
coordinate of no known kind) and ``None`` (no coordinate, and a name that says nothing).
"""

from __future__ import annotations

LATITUDE, LONGITUDE, GRID_Y, GRID_X = "latitude", "longitude", "grid_y", "grid_x"
TIME, VERTICAL, OTHER = "time", "vertical", "other"

#: CF 4.1 / 4.2 / 4.3: units of latitude, longitude and pressure (compared in lower case)
_UNITS = {
    **dict.fromkeys(
        ("degrees_north", "degree_north", "degree_n", "degrees_n", "degreen", "degreesn"),
        LATITUDE,
    ),
    **dict.fromkeys(
        ("degrees_east", "degree_east", "degree_e", "degrees_e", "degreee", "degreese"),
        LONGITUDE,
    ),
    **dict.fromkeys(("pa", "hpa", "kpa", "mbar", "millibar", "bar", "atm", "dbar"), VERTICAL),
}
#: standard names of those axes, of the grid axes that point the same ways, and of time
_STANDARD_NAMES = {
    "latitude": LATITUDE,
    "longitude": LONGITUDE,
    **dict.fromkeys(("grid_latitude", "projection_y_coordinate"), GRID_Y),
    **dict.fromkeys(("grid_longitude", "projection_x_coordinate"), GRID_X),
    "time": TIME,
    **dict.fromkeys(
        (
            "air_pressure",
            "altitude",
            "height",
            "height_above_geopotential_datum",
            "depth",
            "depth_below_geoid",
            "model_level_number",
            "atmosphere_hybrid_sigma_pressure_coordinate",
            "atmosphere_sigma_coordinate",
            "ocean_sigma_coordinate",
            "ocean_s_coordinate",
        ),
        VERTICAL,
    ),
}
#: names xarray users give those dimensions (the last resort, after standard_name and units)
_NAMES = {
    **dict.fromkeys(("lat", "latitude", "nav_lat"), LATITUDE),
    **dict.fromkeys(("lon", "longitude", "nav_lon"), LONGITUDE),
    "rlat": GRID_Y,
    "rlon": GRID_X,
    "time": TIME,
    **dict.fromkeys(("level", "lev", "plev", "depth", "height", "altitude", "pressure"), VERTICAL),
}


def axis_kind(name: str, coordinate=None) -> str | None:
    """The kind of dimension ``name``, from its coordinate variable (a ``cf.Variable``: its
    time units, standard name, then units), else from the name alone."""
    if coordinate is not None:
        if coordinate.time is not None:
            return TIME
        for key, table in ((coordinate.standard_name, _STANDARD_NAMES), (coordinate.units, _UNITS)):
            if isinstance(key, str) and key.strip().lower() in table:
                return table[key.strip().lower()]
    return _NAMES.get(name.lower(), OTHER if coordinate is not None else None)
