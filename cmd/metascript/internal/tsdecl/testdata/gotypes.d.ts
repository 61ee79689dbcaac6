/** sample is documented. */
interface sample {
  /**
   * Plain is
   * two lines.
   */
  plain: string;
  omitted?: number;
  nullable?: string[] | null;
  pointer?: inner;
  nullInMap: { [key: string]: boolean | null };
  override: "a" | "b";
  named: namedMap;
  any: any;
  [field: string]: any;
  depth: number;
}

interface inner {
  depth: number;
}

/** namedMap maps. */
type namedMap = { [key: string]: (inner | null)[] };
