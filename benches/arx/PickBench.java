// Runs ARX's Flash (k-anonymity, Loss metric) on adult with ARX's 7 QIs and prints the optimum,
// the nodes checked and the time of the anonymize call, for the pbg-vs-ARX pick comparison.
// Arguments: a directory holding adult.csv and arx-hierarchies/, the suppression limit, the number
// of runs, and optionally a path the last run's output is saved to as `;` CSV (so that a timing of
// the whole process includes writing the release, as pbg's does).
import java.io.File;
import java.nio.charset.StandardCharsets;
import org.deidentifier.arx.*;
import org.deidentifier.arx.criteria.KAnonymity;
import org.deidentifier.arx.metric.Metric;

public class PickBench {
    public static void main(String[] args) throws Exception {
        String dir = args[0];
        double supp = Double.parseDouble(args[1]);
        int runs = Integer.parseInt(args[2]);
        String output = args.length > 3 ? args[3] : null;
        String[] qis = {"age", "workclass", "education", "marital-status", "race", "sex", "native-country"};
        for (int run = 0; run < runs; run++) {
            Data data = Data.create(new File(dir + "/adult.csv"), StandardCharsets.UTF_8, ';');
            for (String q : qis) {
                data.getDefinition().setAttributeType(q, AttributeType.Hierarchy.create(
                    new File(dir + "/arx-hierarchies/adult_hierarchy_" + q + ".csv"), StandardCharsets.UTF_8, ';'));
            }
            data.getDefinition().setAttributeType("occupation", AttributeType.INSENSITIVE_ATTRIBUTE);
            data.getDefinition().setAttributeType("salary-class", AttributeType.INSENSITIVE_ATTRIBUTE);
            ARXConfiguration config = ARXConfiguration.create();
            config.addPrivacyModel(new KAnonymity(5));
            config.setSuppressionLimit(supp);
            config.setQualityModel(Metric.createLossMetric());
            long t0 = System.nanoTime();
            ARXResult result = new ARXAnonymizer().anonymize(data, config);
            long t1 = System.nanoTime();
            ARXLattice.ARXNode opt = result.getGlobalOptimum();
            String[] names = opt.getQuasiIdentifyingAttributes();
            int[] t = opt.getTransformation();
            StringBuilder node = new StringBuilder();
            for (String q : qis) {
                for (int i = 0; i < names.length; i++) {
                    if (names[i].equals(q)) node.append(node.length() > 0 ? "," : "").append(t[i]);
                }
            }
            int checked = 0, total = 0;
            for (ARXLattice.ARXNode[] level : result.getLattice().getLevels()) {
                for (ARXLattice.ARXNode n : level) { total++; if (n.isChecked()) checked++; }
            }
            if (output != null && run == runs - 1) {
                result.getOutput(false).save(new File(output), ';');
            }
            System.out.printf("suppression %.2f run %d: anonymize %.1f ms, optimum %s (pbg order), loss %s, checked %d of %d%n",
                supp, run, (t1 - t0) / 1e6, node, opt.getHighestScore(), checked, total);
        }
    }
}
